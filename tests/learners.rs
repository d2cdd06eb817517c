//! Learners (read replicas) as real processes: nodes started with
//! `--join ADDR --learner` receive the log, serve reads and long polls from
//! their own state, forward writes, catch up by snapshot after a restart,
//! and stop serving reads while they cannot tell how far behind the leader
//! they are (`tacos_raft::freshness`). See docs/cluster.md, "Learners".

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, GROUP, LEADER_TIMEOUT};
use common::proxy::Proxy;
use common::{java_encode, NacosApi, Reply};
use serde_json::Value;

const MEMBERS: &str = "/tacos/v1/admin/cluster/members";

/// Adds `n` learners joining through the voters in turn, starts them and
/// waits until the membership holds them (as learners) and they converged.
async fn add_learners(
    cluster: &mut Cluster,
    voters: usize,
    n: usize,
    extra: &[&str],
) -> Vec<usize> {
    // The voters' common arguments, less a `--zone` the learners set.
    let mut args: Vec<String> = cluster.common_args().to_vec();
    if extra.contains(&"--zone") {
        if let Some(at) = args.iter().position(|a| a == "--zone") {
            args.drain(at..at + 2);
        }
    }
    args.push("--learner".to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let learners: Vec<usize> = (0..n)
        .map(|k| cluster.add_node_with(Some(k % voters), args.clone()))
        .collect();
    cluster.start_nodes(&learners).await;
    let ids: Vec<u64> = learners.iter().map(|&i| cluster.id(i)).collect();
    cluster
        .poll_until("the learners in the membership", LEADER_TIMEOUT, || async {
            let members = cluster.get_json(0, MEMBERS).await?;
            let listed = |role: &str| -> Vec<u64> {
                members[role]
                    .as_array()
                    .map(|a| a.iter().filter_map(|m| m["id"].as_u64()).collect())
                    .unwrap_or_default()
            };
            if listed("learners") == ids && listed("voters").len() == voters {
                Ok(())
            } else {
                Err(format!("members: {members}"))
            }
        })
        .await;
    cluster.wait_converged().await;
    learners
}

/// A raw GET of a config on node `i` with extra query pairs.
async fn get_config(cluster: &Cluster, i: usize, data_id: &str, extra: &[(&str, &str)]) -> Reply {
    let mut query = vec![("dataId", data_id), ("group", GROUP), ("tenant", "")];
    query.extend_from_slice(extra);
    let query = serde_urlencoded::to_string(&query).expect("encoding a query");
    cluster
        .get(i, &format!("{}?{query}", NacosApi::CONFIGS))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// 3 voters and 4 learners: a write on any node (learners forward theirs)
/// is read on every node; a long poll held on every node is woken by a
/// write on a learner; a learner killed while the cluster moves on past its
/// log (the leader purges it) is caught up by a snapshot when it comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learners_serve_reads_and_listeners_and_catch_up() {
    let mut cluster = Cluster::start(
        3,
        &["--snapshot-log-bytes", "4096", "--snapshot-entries", "200"],
    )
    .await;
    let learners = add_learners(&mut cluster, 3, 4, &[]).await;
    let all: Vec<usize> = (0..cluster.len()).collect();

    // Writes on every node, read everywhere.
    let mut written = BTreeMap::new();
    for &i in &all {
        let key = format!("from-node-{}", cluster.id(i));
        let content = format!("written on node {}", cluster.id(i));
        cluster.publish(i, &key, &content).await;
        assert_eq!(
            cluster.read(i, &key).await.as_deref(),
            Some(content.as_str()),
            "node {} reads its own write",
            cluster.id(i)
        );
        written.insert(key, content);
    }
    cluster.wait_converged().await;
    for &j in &all {
        for (key, content) in &written {
            assert_eq!(
                cluster.read(j, key).await.as_deref(),
                Some(content.as_str()),
                "{key} on node {}",
                cluster.id(j)
            );
        }
        let view = cluster.raft_view(j).await;
        let is_learner = learners.contains(&j);
        assert_eq!(
            view["learner"]["serving"].as_bool(),
            is_learner.then_some(true),
            "node {}: {view}",
            cluster.id(j)
        );
    }

    // A long poll on every node; a write on a learner wakes them all.
    cluster.publish(0, "watched", "v1").await;
    cluster.wait_converged().await;
    let polls: Vec<_> = all
        .iter()
        .map(|&i| cluster.long_poll(i, "watched", "v1"))
        .collect();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        polls.iter().all(|p| !p.is_finished()),
        "a long poll was answered before any change"
    );
    cluster.publish(learners[0], "watched", "v2").await;
    let expected = format!("{}\n", java_encode(&format!("watched\u{2}{GROUP}\u{1}")));
    for (i, poll) in all.iter().zip(polls) {
        let answer = tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .unwrap_or_else(|_| panic!("node {}'s long poll was not woken", cluster.id(*i)))
            .expect("long poll task");
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, expected.as_str()),
            "node {}",
            cluster.id(*i)
        );
    }

    // A learner killed; the cluster moves past its log; it catches up by a
    // snapshot.
    let victim = learners[1];
    let victim_last = cluster.raft_view(victim).await["lastLogIndex"]
        .as_u64()
        .expect("lastLogIndex");
    cluster.kill9(victim);
    let writers = [0, 1, 2, learners[0]];
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for _ in 0..100 {
            let key = format!("bulk-{n:05}");
            let content = format!("bulk {n}");
            cluster
                .publish(writers[n % writers.len()], &key, &content)
                .await;
            written.insert(key, content);
            n += 1;
        }
        let leader = cluster.wait_for_leader(LEADER_TIMEOUT).await;
        let view = cluster.raft_view(leader).await;
        if view["purged"].as_u64().is_some_and(|p| p > victim_last) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the leader did not purge its log past {victim_last} after {n} writes: {view}"
        );
    }
    cluster.start_node(victim).await;
    cluster.wait_converged().await;
    let log = cluster.log(victim);
    assert!(
        log.contains("installed snapshot"),
        "the restarted learner did not install a snapshot:\n{}",
        common::cluster::tail(&log, 40)
    );
    for key in ["from-node-1", "from-node-7", "bulk-00000"] {
        assert_eq!(
            cluster.read(victim, key).await.as_ref(),
            written.get(key),
            "{key} on the learner that caught up"
        );
    }
    let last = format!("bulk-{:05}", n - 1);
    assert_eq!(
        cluster.read(victim, &last).await.as_ref(),
        written.get(&last)
    );
}

/// A learner that cannot reach any voter does not know how far behind it
/// is: after `--learner-stale-seconds` its reads, long polls and `/health`
/// answer 503 (a stale read, asked for, still answers), and it serves again
/// once the voters are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_cut_off_from_the_voters_stops_serving_reads() {
    let mut cluster = Cluster::start(3, &[]).await;
    let learner = add_learners(&mut cluster, 3, 1, &["--learner-stale-seconds", "2"]).await[0];
    cluster.publish(0, "kept", "before the cut").await;
    cluster.wait_converged().await;
    assert_eq!(get_config(&cluster, learner, "kept", &[]).await.status, 200);

    for voter in 0..3 {
        cluster.kill9(voter);
    }
    let refused = cluster
        .poll_until(
            "the learner refusing reads",
            Duration::from_secs(20),
            || async {
                let reply = get_config(&cluster, learner, "kept", &[]).await;
                if reply.status == 503 {
                    Ok(reply)
                } else {
                    Err(format!("{reply:?}"))
                }
            },
        )
        .await;
    assert!(
        refused.body.contains("has not reached the leader"),
        "{refused:?}"
    );
    let stale = get_config(&cluster, learner, "kept", &[("consistency", "stale")]).await;
    assert_eq!(
        (stale.status, stale.body.as_str()),
        (200, "before the cut"),
        "a stale read asked for"
    );
    let health = cluster.get(learner, "/health").await.expect("/health");
    assert_eq!(health.status, 503, "{health:?}");
    let poll = cluster
        .long_poll(learner, "kept", "before the cut")
        .await
        .expect("long poll task");
    assert_eq!(poll.status, 503, "{poll:?}");
    let view: Value = cluster.raft_view(learner).await;
    assert_eq!(view["learner"]["serving"], false, "{view}");

    cluster.start_nodes(&[0, 1, 2]).await;
    cluster
        .poll_until(
            "the learner serving again",
            Duration::from_secs(30),
            || async {
                let reply = get_config(&cluster, learner, "kept", &[]).await;
                if reply.status == 200 {
                    Ok(())
                } else {
                    Err(format!("{reply:?}"))
                }
            },
        )
        .await;
    cluster.publish(learner, "kept", "after the cut").await;
    assert_eq!(
        cluster.read(learner, "kept").await.as_deref(),
        Some("after the cut")
    );
}

/// A learner in a "remote data center": it advertises an address whose
/// proxy passes every byte 50 ms late in each direction (a delay line, so
/// the link keeps its throughput), so the leader's log reaches it 50 ms
/// late and each answer takes 50 ms back. It still catches up, serves
/// reads, wakes its long polls on writes made elsewhere, forwards its own
/// writes (read-your-writes) and keeps serving (its lag stays under the
/// limit). How late its listeners hear is printed, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_behind_a_50ms_link_serves_reads_and_listeners() {
    const REMOTE_IP: &str = "127.0.1.4";
    const LATENCY: Duration = Duration::from_millis(50);
    let mut cluster = Cluster::start(3, &[]).await;
    cluster.publish(0, "remote", "before the learner").await;

    let mut args: Vec<String> = cluster.common_args().to_vec();
    args.extend(["--learner", "--advertise", REMOTE_IP].map(String::from));
    let learner = cluster.add_node_with(Some(0), args);
    // The learner binds 127.0.0.1 and tells the others to reach it at
    // REMOTE_IP, where the proxies listen on the same ports.
    let mut proxies = Vec::new();
    for port in [cluster.cluster_port(learner), cluster.http_port(learner)] {
        let listen = format!("{REMOTE_IP}:{port}").parse().expect("an address");
        let target = format!("127.0.0.1:{port}").parse().expect("an address");
        let proxy = Proxy::start(listen, target).await;
        proxy.latency(LATENCY);
        proxies.push(proxy);
    }
    cluster.start_nodes(&[learner]).await;
    cluster
        .poll_until(
            "the remote learner in the membership",
            LEADER_TIMEOUT,
            || async {
                let members = cluster.get_json(0, MEMBERS).await?;
                let listed = members["learners"].to_string();
                if listed.contains(&format!("{REMOTE_IP}:{}", cluster.cluster_port(learner))) {
                    Ok(())
                } else {
                    Err(format!("members: {members}"))
                }
            },
        )
        .await;
    cluster.wait_converged().await;
    assert!(
        proxies[0].accepted() > 0,
        "the leader reached the learner without passing the 50 ms link"
    );
    assert_eq!(
        cluster.read(learner, "remote").await.as_deref(),
        Some("before the learner"),
        "the learner caught up over the slow link"
    );

    // Its long polls hear of writes made on the voters.
    for round in 0..3 {
        let held = format!("v{round}");
        let next = format!("v{}", round + 1);
        cluster.publish(0, "watched", &held).await;
        cluster
            .poll_until(
                "the learner holding the watched key",
                Duration::from_secs(10),
                || async {
                    match cluster.read(learner, "watched").await {
                        Some(c) if c == held => Ok(()),
                        other => Err(format!("{other:?}")),
                    }
                },
            )
            .await;
        let poll = cluster.long_poll(learner, "watched", &held);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!poll.is_finished(), "answered before any change");
        let written = Instant::now();
        cluster.publish(1, "watched", &next).await;
        let acked = written.elapsed();
        let answer = tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .expect("the remote learner's long poll was not woken")
            .expect("long poll task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.starts_with("watched"), "{answer:?}");
        eprintln!(
            "round {round}: publish acked after {acked:?}, the remote learner's listener told after {:?}",
            written.elapsed()
        );
        assert_eq!(
            cluster.read(learner, "watched").await.as_deref(),
            Some(next.as_str())
        );
    }

    // Its own writes go to the leader and are read back at once.
    cluster
        .publish(learner, "from-remote", "written far away")
        .await;
    assert_eq!(
        cluster.read(learner, "from-remote").await.as_deref(),
        Some("written far away")
    );
    assert_eq!(
        cluster.read(2, "from-remote").await.as_deref(),
        Some("written far away")
    );
    let view = cluster.raft_view(learner).await;
    assert_eq!(view["learner"]["serving"], true, "{view}");
    let health = cluster.get(learner, "/health").await.expect("/health");
    assert_eq!(health.status, 200, "{health:?}");
    eprintln!("the remote learner: {}", view["learner"]);
}

/// The lines of `GET /nacos/serverlist[?zone=]` on node `i`, sorted.
async fn server_list(cluster: &Cluster, i: usize, zone: Option<&str>) -> Vec<String> {
    let path = match zone {
        Some(zone) => format!("/nacos/serverlist?zone={zone}"),
        None => "/nacos/serverlist".to_string(),
    };
    let reply = cluster
        .get(i, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reply.status, 200, "{reply:?}");
    let mut lines: Vec<String> = reply.body.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Zones: three voters in zone `a`, two learners in zone `b`. The
/// address-server list a node hands out names the serving learners of the
/// zone asked (`?zone=`, else the node's own), else the zone's serving
/// members, else every serving member; a killed learner leaves it. The
/// official Node SDK configured with only that address server
/// (`endpoint`) publishes and reads through the nodes it lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_server_list_prefers_the_zone_s_learners() {
    let mut cluster = Cluster::start(3, &["--zone", "a"]).await;
    let learners = add_learners(&mut cluster, 3, 2, &["--zone", "b"]).await;
    let sorted = |nodes: &[usize]| {
        let mut addrs: Vec<String> = nodes.iter().map(|&i| cluster.http_addr(i)).collect();
        addrs.sort();
        addrs
    };
    let voters = sorted(&[0, 1, 2]);
    let zone_b = sorted(&learners);
    let everyone = sorted(&[0, 1, 2, learners[0], learners[1]]);
    cluster
        .poll_until("the learners serving", LEADER_TIMEOUT, || async {
            let list = server_list(&cluster, learners[0], None).await;
            if list == zone_b {
                Ok(())
            } else {
                Err(format!("{list:?}"))
            }
        })
        .await;
    assert_eq!(server_list(&cluster, 0, None).await, voters);
    assert_eq!(server_list(&cluster, 0, Some("b")).await, zone_b);
    assert_eq!(server_list(&cluster, learners[1], Some("a")).await, voters);
    assert_eq!(server_list(&cluster, 1, Some("elsewhere")).await, everyone);

    let sdk_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    assert!(
        sdk_dir.join("node_modules/nacos").is_dir(),
        "npm `nacos` is not installed: run scripts/test.sh (it installs it)"
    );
    let script = sdk_dir.join("node_endpoint_client.js");
    let endpoint = cluster.http_addr(learners[0]);
    let (ok, stdout, stderr) = common::run_sdk_script(
        "node",
        &[script.to_str().unwrap(), endpoint.as_str(), "zoned.json"],
        cluster.tmp().path(),
        Duration::from_secs(90),
    );
    assert!(
        ok && stdout.contains("all ok"),
        "node SDK via the address server failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        cluster.read_linearizable(0, "zoned.json").await.as_deref(),
        Some("via endpoint")
    );

    let alone = sorted(&[learners[0]]);
    cluster.kill9(learners[1]);
    assert_eq!(server_list(&cluster, learners[0], None).await, alone);
}

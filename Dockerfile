# syntax=docker/dockerfile:1
#
# Tacos in a container.
#
#   docker build -t tacos .
#
# The image listens on 0.0.0.0 (TACOS_BIND) with its data in the volume
# /var/lib/tacos (TACOS_DATA_DIR). Bound to 0.0.0.0, tacos refuses to start
# without an address other nodes and clients can reach it at (--advertise),
# and, since its cluster port is then reachable from other hosts, without a
# shared secret for traffic between nodes (--cluster-token, at least 16
# characters). So even a single node needs both:
#
#   docker run -d --name tacos \
#     -p 8848:8848 -p 9848:9848 \
#     -e TACOS_ADVERTISE=<host or IP clients use> \
#     -e TACOS_CLUSTER_TOKEN=<secret of 16+ characters> \
#     -v tacos-data:/var/lib/tacos \
#     tacos
#
# For a cluster, give every node its own TACOS_NODE_ID, its own
# TACOS_ADVERTISE, the same TACOS_CLUSTER_TOKEN, publish 9849 (the cluster
# port) as well, and start nodes other than 1 with TACOS_JOIN=<node 1>:9849.
# Arguments after the image name are passed to tacos (e.g. `--help`, or
# `--config /etc/tacos/tacos.toml` with the file mounted there); every
# setting is also a TACOS_* variable, see README.md "Configuration".
# Ports: 8848 HTTP API, 9848 Nacos gRPC API, 9849 cluster traffic.
# Health: GET /health answers 200 while the node knows a leader.

FROM rust:1-bookworm AS builder
WORKDIR /src
COPY . .
# The registry and target/ are BuildKit cache mounts, so a rebuild after a
# source change recompiles tacos only, not its dependencies.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --profile dist --locked --bin tacos \
    && cp target/dist/tacos /usr/local/bin/tacos

FROM debian:bookworm-slim
RUN groupadd --system --gid 10001 tacos \
    && useradd --system --uid 10001 --gid tacos --home-dir /var/lib/tacos \
        --no-create-home --shell /usr/sbin/nologin tacos \
    && mkdir -p /var/lib/tacos /etc/tacos \
    && chown tacos:tacos /var/lib/tacos
COPY --from=builder /usr/local/bin/tacos /usr/local/bin/tacos
ENV TACOS_DATA_DIR=/var/lib/tacos \
    TACOS_BIND=0.0.0.0
VOLUME /var/lib/tacos
EXPOSE 8848 9848 9849
USER 10001:10001
WORKDIR /var/lib/tacos
# tacos handles SIGTERM itself: held long polls are answered, in-flight
# requests finish, the log is flushed and the data dir lock released.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tacos"]
# No default arguments: settings come from the TACOS_* variables (set
# TACOS_ADVERTISE and TACOS_CLUSTER_TOKEN, see above) or from arguments.
CMD []

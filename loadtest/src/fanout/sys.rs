//! What the fan-out tool needs from the operating system: enough file descriptors,
//! client sockets bound to several loopback source addresses, and the server
//! processes behind the ports it loads (for their RSS).
//!
//! Ports: a client socket is one of about 28,000 ephemeral ports
//! (`/proc/sys/net/ipv4/ip_local_port_range`) per (source address, destination
//! address:port). 50,000 connections from 127.0.0.1 to one port run out, so
//! listeners are spread over source addresses 127.0.0.1, 127.0.0.2, ... (all of
//! 127.0.0.0/8 is the loopback interface on Linux; nothing to configure). Each socket is
//! bound with `IP_BIND_ADDRESS_NO_PORT`, so the port is picked at `connect` per
//! destination instead of at `bind` for all of them.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;

use tokio::net::{TcpSocket, TcpStream};

/// Raises this process's `RLIMIT_NOFILE` soft limit to at least `want` (and the hard
/// limit with it, which needs root or `CAP_SYS_RESOURCE`, capped at
/// `/proc/sys/fs/nr_open`). Returns the (soft, hard) limits now in force; `Err` when
/// the limit stays below `want`.
pub fn raise_nofile(want: u64) -> Result<(u64, u64), String> {
    let (soft, hard) = nofile()?;
    if soft >= want {
        return Ok((soft, hard));
    }
    let cap = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let want = want.min(cap);
    // Raising the hard limit needs privileges; without them settle for the hard limit.
    if want > hard && set_nofile(want, want).is_ok() {
        return nofile();
    }
    set_nofile(want.min(hard), hard)?;
    let (soft, hard) = nofile()?;
    if soft < want {
        return Err(format!(
            "RLIMIT_NOFILE is {soft} (hard {hard}), {want} needed: run as root or raise the \
             hard limit (`ulimit -Hn {want}` in a root shell, or LimitNOFILE= of the unit)"
        ));
    }
    Ok((soft, hard))
}

fn nofile() -> Result<(u64, u64), String> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(format!("getrlimit: {}", io::Error::last_os_error()));
    }
    Ok((r.rlim_cur, r.rlim_max))
}

fn set_nofile(soft: u64, hard: u64) -> Result<(), String> {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit only reads the struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(format!("setrlimit: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// How many ephemeral ports one (source, destination) pair can use.
pub fn ephemeral_ports() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
            let (lo, hi) = (it.next()??, it.next()??);
            (hi >= lo).then(|| hi - lo + 1)
        })
        .unwrap_or(28_232)
}

/// Source addresses for `per_destination` connections to one address:port: `None`
/// (the kernel's choice) when one address has ports enough (at most 80% of the
/// ephemeral range), else 127.0.0.1, 127.0.0.2, ... as many as needed (or `forced`).
pub fn source_addresses(per_destination: u64, forced: Option<usize>) -> Vec<Option<IpAddr>> {
    let count = match forced {
        Some(n) => n.max(1),
        None => {
            let usable = (ephemeral_ports() * 4 / 5).max(1);
            per_destination.div_ceil(usable).max(1) as usize
        }
    };
    if count == 1 && forced.is_none() {
        return vec![None];
    }
    (0..count).map(|i| Some(IpAddr::V4(loopback(i)))).collect()
}

/// 127.0.0.1 + i (127.0.1.0 follows 127.0.0.255).
pub fn loopback(i: usize) -> Ipv4Addr {
    let n = 0x7f00_0001u32 + i as u32;
    Ipv4Addr::from(n)
}

/// Connects to `addr`, from `source` when given (its port chosen at connect), with
/// Nagle off and a zero linger: closed, the socket is reset instead of left in
/// TIME_WAIT. Thousands of listeners closed at once would otherwise hold as many
/// ephemeral ports for a minute, and a port in TIME_WAIT cannot be listened on
/// (`qa` right after a fan-out found no free ports).
pub async fn connect_from(source: Option<IpAddr>, addr: SocketAddr) -> io::Result<TcpStream> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(ip) = source {
        if ip.is_ipv4() {
            let one: libc::c_int = 1;
            // SAFETY: a valid socket and a c_int option value of the right size.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::IPPROTO_IP,
                    libc::IP_BIND_ADDRESS_NO_PORT,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.set_zero_linger()?;
    Ok(stream)
}

/// The inodes of the sockets listening on TCP `port` (IPv4 and IPv6), from
/// `/proc/net/tcp` text.
pub fn listening_inodes(proc_net_tcp: &str, port: u16) -> Vec<u64> {
    proc_net_tcp
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = f.get(1)?;
            let (_, hex_port) = local.rsplit_once(':')?;
            let p = u16::from_str_radix(hex_port, 16).ok()?;
            // st 0A = LISTEN
            (p == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

/// The process holding the socket that listens on TCP `port`, if this user can see it.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// VmRSS of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    crate::qa::procs::sample(pid).map(|s| s.rss_kib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_listening_sockets() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:2290 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:2290 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1\n\
   2: 0100007F:2291 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 8848), vec![4242]);
        assert_eq!(listening_inodes(table, 8849), vec![4444]);
        assert!(listening_inodes(table, 9848).is_empty());
    }

    #[test]
    fn source_addresses_spread_when_ports_run_out() {
        assert_eq!(source_addresses(100, None), vec![None]);
        let many = source_addresses(ephemeral_ports() * 2, None);
        assert!(many.len() >= 3, "{many:?}");
        assert_eq!(many[0], Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))));
        assert_eq!(many[1], Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))));
        assert_eq!(source_addresses(10, Some(2)).len(), 2);
        assert_eq!(loopback(255), Ipv4Addr::new(127, 0, 1, 0));
    }

    #[test]
    fn nofile_can_be_read_and_kept() {
        let (soft, hard) = nofile().unwrap();
        assert!(soft <= hard);
        // Asking for no more than we have changes nothing.
        assert_eq!(raise_nofile(soft.min(64)).unwrap(), (soft, hard));
    }

    #[test]
    fn finds_its_own_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(pid_listening_on(port), Some(std::process::id()));
    }
}

//! Latency and slow links on a real run: a transparent TCP proxy in every node's network
//! namespace (`coordsim real-link`), fed the delays of the active faults by the orchestrator.
//!
//! Why a proxy: this kernel has neither netem (`tc qdisc ... netem`: "Specified qdisc kind is
//! unknown") nor NFQUEUE (`nft ... queue`: "Could not process rule"), so no packet can be held
//! back in the kernel. nftables can redirect, though: in each namespace a `nat output` rule sends
//! every TCP connection the node opens to another node (or to the resource) to the node's proxy,
//! which opens the same connection onwards from the same namespace (its socket marked so that the
//! rule lets it pass; partitions and packet loss still apply to it) and holds each chunk back for
//! the link's delay ([`crate::proxy::serve_transparent`]). Every connection of the run has one
//! proxy, its opener's, which delays what the opener sends by the delay of the link to the peer
//! and what comes back by the delay of the link back. The orchestrator's own connections (leader
//! and session polls, from outside the namespaces) are not delayed.
//!
//! Meaning, as in the simulator (sim/src/nemesis/mod.rs, sim/src/net.rs): `latency` draws
//! each chunk's delay from its range on every link, the latest active fault winning; a
//! `link-delay` adds its delay to one directed link, the longest active one counting. Unlike the
//! simulator, the real network's own latency (well under a millisecond here) replaces the
//! simulator's link latency (1-10 ms per message) when no fault is active, and a delay holds back
//! a TCP stream's chunk, not an RPC message. A `link-delay` from A to B delays every byte A
//! sends B, where the simulator delays only the requests A sends B: the same on the
//! client-to-server links the library's scenarios slow down, not on server-to-server links
//! (replies on connections B opened).
//!
//! Control: the proxy listens on a Unix socket in the run's folder (reachable from every
//! namespace); the orchestrator connects once, reads `port N` (where the proxy listens on
//! 127.0.0.1), then writes one line per peer whenever a delay changes:
//! `link <peer ip> <request min ns> <request max ns> <reply min ns> <reply max ns> <lost>`, where
//! `<lost>` names the replies the node loses on that link (`none`, `pings`, `creates`, `writes`,
//! `all`: `drop-replies` on the connections a proxy started with `--zookeeper-port` reads packet by
//! packet, real/src/zk_frames.rs, or with `--etcd-port` frame by frame, real/src/h2_frames.rs). The proxy exits when that connection closes,
//! so a killed orchestrator leaves no proxy behind.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::netns::Network;
use crate::procs::Procs;
use crate::proxy::{Delay, LinkState, Links, Protocol};
use crate::zk_frames::LostReplies;

/// The mark of the proxies' own sockets, which the redirect rule passes ("cs").
pub const MARK: u32 = 0x6373;

/// `coordsim real-link --control <socket> [--zookeeper-port P | --etcd-port P]`: serves until the
/// orchestrator's control connection closes; connections to port `P` are read as that protocol.
pub fn main(control: &Path, reads: Option<(u16, Protocol)>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("127.0.0.1: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let _ = std::fs::remove_file(control);
        let unix = tokio::net::UnixListener::bind(control).map_err(|e| format!("{}: {e}", control.display()))?;
        let (stream, _) = unix.accept().await.map_err(|e| format!("{}: {e}", control.display()))?;
        let links = Links::default();
        let serving = tokio::spawn(crate::proxy::serve_transparent(listener, links.clone(), MARK, reads));
        let result = control_loop(stream, port, &links).await;
        serving.abort();
        result
    })
}

async fn control_loop(stream: tokio::net::UnixStream, port: u16, links: &Links) -> Result<(), String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (read, mut write) = stream.into_split();
    write.write_all(format!("port {port}\n").as_bytes()).await.map_err(|e| e.to_string())?;
    let mut lines = tokio::io::BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        let (peer, state) = parse_line(&line).ok_or_else(|| format!("a bad control line: {line:?}"))?;
        links.set(peer, state);
    }
    Ok(())
}

fn parse_line(line: &str) -> Option<(Ipv4Addr, LinkState)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [tag, ip, numbers @ .., lost] = fields.as_slice() else { return None };
    if *tag != "link" || numbers.len() != 4 {
        return None;
    }
    let ns: Vec<u64> = numbers.iter().map(|n| n.parse().ok()).collect::<Option<_>>()?;
    let delay = |min: u64, max: u64| Delay { min: Duration::from_nanos(min), max: Duration::from_nanos(max) };
    let state = LinkState {
        request_delay: delay(ns[0], ns[1]),
        reply_delay: delay(ns[2], ns[3]),
        lost_replies: LostReplies::parse(lost)?,
        ..LinkState::default()
    };
    Some((ip.parse().ok()?, state))
}

fn line(peer: Ipv4Addr, request: Delay, reply: Delay, lost: LostReplies) -> String {
    format!(
        "link {peer} {} {} {} {} {}\n",
        request.min.as_nanos(),
        request.max.as_nanos(),
        reply.min.as_nanos(),
        reply.max.as_nanos(),
        lost.name()
    )
}

/// The delay of every directed link between `nodes` under the active faults: `latency` (the
/// latest one's range, on every link) plus the longest active `link-delay` of that link.
pub fn delays(
    nodes: &[String],
    latency: Option<Delay>,
    link_delays: &[(String, String, Duration)],
) -> BTreeMap<(String, String), Delay> {
    let base = latency.unwrap_or_default();
    let mut table = BTreeMap::new();
    for from in nodes {
        for to in nodes.iter().filter(|to| *to != from) {
            let extra = link_delays
                .iter()
                .filter(|(f, t, _)| f == from && t == to)
                .map(|(_, _, d)| *d)
                .max()
                .unwrap_or_default();
            table.insert((from.clone(), to.clone()), Delay { min: base.min + extra, max: base.max + extra });
        }
    }
    table
}

/// The orchestrator's end: one proxy per node of the network, each reached by its control socket.
pub struct LinkControl {
    /// Node → its proxy's control connection.
    proxies: BTreeMap<String, UnixStream>,
    /// Every node the proxies know, with its address (the resource's is the bridge's).
    addresses: BTreeMap<String, Ipv4Addr>,
}

impl LinkControl {
    /// Starts a proxy in every namespace of `net` and redirects each node's outgoing connections
    /// to it. Must run before the servers start, so that every connection of the run goes through
    /// its proxy. `nodes` are the namespaces' nodes, `resource` the resource's name (on the bridge).
    pub async fn start(
        net: &Network,
        nodes: &[String],
        resource: &str,
        procs: &Procs,
        exe: &Path,
        dir: &Path,
        reads: Option<(u16, Protocol)>,
    ) -> Result<LinkControl, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut sockets: Vec<(String, PathBuf)> = Vec::new();
        for node in nodes {
            let socket = dir.join(format!("{node}.sock"));
            let mut command = std::process::Command::new(exe);
            command.arg("real-link").arg("--control").arg(&socket);
            match reads {
                Some((port, Protocol::Zookeeper)) => {
                    command.arg("--zookeeper-port").arg(port.to_string());
                }
                Some((port, Protocol::Etcd)) => {
                    command.arg("--etcd-port").arg(port.to_string());
                }
                None => {}
            }
            procs.spawn(&format!("link-{node}"), net.wrap(node, &command), &dir.join(format!("{node}.log")))?;
            sockets.push((node.clone(), socket));
        }
        let mut proxies = BTreeMap::new();
        for (node, socket) in sockets {
            let stream = connect(&socket, procs, &format!("link-{node}")).await?;
            let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
            let mut first = String::new();
            reader.read_line(&mut first).map_err(|e| format!("{}: {e}", socket.display()))?;
            let port: u16 = first
                .strip_prefix("port ")
                .and_then(|p| p.trim().parse().ok())
                .ok_or_else(|| format!("{}: expected `port N`, read {first:?}", socket.display()))?;
            net.redirect(&node, port, MARK)?;
            proxies.insert(node, stream);
        }
        let mut addresses: BTreeMap<String, Ipv4Addr> = nodes.iter().map(|n| (n.clone(), net.ip(n))).collect();
        addresses.insert(resource.to_string(), net.bridge_ip());
        Ok(LinkControl { proxies, addresses })
    }

    /// Gives every proxy the delays of its links in `table` (missing links: none) and the replies
    /// each node loses in `lost` (missing nodes: none), on every link it opened.
    pub fn set(
        &mut self,
        table: &BTreeMap<(String, String), Delay>,
        lost: &BTreeMap<String, LostReplies>,
    ) -> Result<(), String> {
        for (node, stream) in &mut self.proxies {
            let mut text = String::new();
            let lost = lost.get(node).copied().unwrap_or_default();
            for (peer, ip) in self.addresses.iter().filter(|(peer, _)| *peer != node) {
                let get =
                    |from: &str, to: &str| table.get(&(from.to_string(), to.to_string())).copied().unwrap_or_default();
                text.push_str(&line(*ip, get(node, peer), get(peer, node), lost));
            }
            stream.write_all(text.as_bytes()).map_err(|e| format!("the link proxy of {node}: {e}"))?;
        }
        Ok(())
    }

    /// Every node the delays can name (the nodes and the resource).
    pub fn nodes(&self) -> Vec<String> {
        self.addresses.keys().cloned().collect()
    }
}

/// Connects to a proxy's control socket once it exists (at most 5 s).
async fn connect(socket: &Path, procs: &Procs, label: &str) -> Result<UnixStream, String> {
    for _ in 0..250 {
        if let Ok(stream) = UnixStream::connect(socket) {
            return Ok(stream);
        }
        if let Some(status) = procs.exited(label) {
            return Err(format!("the link proxy {label} exited ({status}); see its log beside {}", socket.display()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("the link proxy {label} did not open {} within 5 s", socket.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn latency_covers_every_link_and_a_link_delay_adds_to_one_direction_only() {
        let ms = Duration::from_millis;
        let latency = Delay { min: ms(100), max: ms(800) };
        let slow = [("c2".to_string(), "s1".to_string(), ms(30)), ("c2".to_string(), "s1".to_string(), ms(50))];
        let table = delays(&names(&["s1", "c2", "resource"]), Some(latency), &slow);
        assert_eq!(table.len(), 6);
        assert_eq!(table[&("c2".into(), "s1".into())], Delay { min: ms(150), max: ms(850) }, "the longest counts");
        assert_eq!(table[&("s1".into(), "c2".into())], latency);
        assert_eq!(table[&("c2".into(), "resource".into())], latency);
        let quiet = delays(&names(&["s1", "c2"]), None, &[]);
        assert!(quiet.values().all(|d| *d == Delay::default()));
    }

    #[test]
    fn a_control_line_round_trips_and_a_bad_one_is_refused() {
        let ms = Duration::from_millis;
        let (request, reply) = (Delay { min: ms(1), max: ms(40) }, Delay::fixed(ms(30)));
        let text = line(Ipv4Addr::new(10, 213, 7, 2), request, reply, LostReplies::Creates);
        let (peer, state) = parse_line(text.trim()).unwrap();
        assert_eq!(peer, Ipv4Addr::new(10, 213, 7, 2));
        assert_eq!((state.request_delay, state.reply_delay), (request, reply));
        assert_eq!(state.lost_replies, LostReplies::Creates);
        assert!(parse_line("link 10.213.7.2 1 2 3 none").is_none());
        assert!(parse_line("link 10.213.7.2 1 2 3 4").is_none(), "no lost replies word");
        assert!(parse_line("link 10.213.7.2 1 2 3 4 some").is_none());
        assert!(parse_line("cut 10.213.7.2 1 2 3 4 none").is_none());
    }
}

//! TCP links through this process, where the nemesis can cut them (both ways or replies only),
//! slow them down, or drop their connections.
//!
//! Two uses: [`LinkProxy`] is one client's link to one server in the test's own process (the
//! Testbed); [`serve_transparent`] is every outgoing link of one node of a real run, inside the
//! node's network namespace, where nftables redirects the node's connections to it
//! (`coordsim real-link`, [`crate::links`]).
//!
//! Why a proxy: user code under test runs inside the test's own process (the etcd-client and
//! zookeeper-client crates on the test's runtime), so it shares the host's network stack with the
//! servers, and the namespaces and nftables rules that cut a client *process* off
//! ([`crate::netns`]) cannot tell it from the servers' other clients. A proxy per (client, server)
//! link is the one place left to put a fault between them; it is also how delay is had on a kernel
//! without netem.
//!
//! A cut does to TCP what a partition does: nothing crosses; what was sent waits (in the proxy, then
//! in the kernel's buffers, so a sender's writes block once they fill, as when its window closes)
//! and is delivered when the cut heals, as TCP's retransmissions would deliver it. One difference
//! with a real partition: a connection opened during a cut completes its handshake (the kernel
//! answers for the listening socket) and then carries nothing, where a real SYN would go
//! unanswered; either way the client hears nothing from the server and times out.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::h2_frames;
use crate::zk_frames::{self, LostReplies, Verdict};

/// A client protocol a link proxy can read, to lose the replies a `drop-replies` fault names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// ZooKeeper's packets ([`zk_frames`]).
    Zookeeper,
    /// etcd's gRPC over HTTP/2 ([`h2_frames`]).
    Etcd,
}

/// One connection's reading, shared by its two pumps.
enum Reader {
    Zookeeper(zk_frames::Connection),
    Etcd(Box<h2_frames::Connection>),
}

impl Reader {
    fn new(protocol: Protocol) -> Reader {
        match protocol {
            Protocol::Zookeeper => Reader::Zookeeper(zk_frames::Connection::default()),
            Protocol::Etcd => Reader::Etcd(Box::default()),
        }
    }

    fn request(&mut self, unit: &[u8]) {
        match self {
            Reader::Zookeeper(connection) => connection.request(unit),
            Reader::Etcd(connection) => connection.request(unit),
        }
    }

    fn reply(&mut self, unit: &[u8], lost: LostReplies) -> Verdict {
        match self {
            Reader::Zookeeper(connection) => connection.reply(unit, lost),
            Reader::Etcd(connection) => connection.reply(unit, lost),
        }
    }
}

/// Cuts one way's bytes into the protocol's units: whole packets, or the preface and frames.
enum Units {
    Packets(zk_frames::Packets),
    Frames(h2_frames::Frames),
}

impl Units {
    fn new(protocol: Protocol, way: Way) -> Units {
        match (protocol, way) {
            (Protocol::Zookeeper, _) => Units::Packets(zk_frames::Packets::default()),
            (Protocol::Etcd, Way::Request) => Units::Frames(h2_frames::Frames::client()),
            (Protocol::Etcd, Way::Reply) => Units::Frames(h2_frames::Frames::server()),
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        match self {
            Units::Packets(packets) => packets.push(bytes),
            Units::Frames(frames) => frames.push(bytes),
        }
    }
}

/// What a link lets through now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkState {
    /// Bytes from the client are held back.
    pub requests_cut: bool,
    /// Bytes from the server are held back.
    pub replies_cut: bool,
    /// Added to each chunk's trip from the client to the server.
    pub request_delay: Delay,
    /// Added to each chunk's trip from the server to the client.
    pub reply_delay: Delay,
    /// Bumped to drop every open connection (the client sees its connection closed, as when a
    /// server drops its clients).
    pub generation: u64,
    /// Replies lost on the way back, on a connection read as its client protocol
    /// ([`crate::zk_frames`], [`crate::h2_frames`]; `drop-replies` on real clusters).
    pub lost_replies: LostReplies,
}

/// Which way bytes flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Request,
    Reply,
}

impl LinkState {
    fn open(&self, way: Way) -> bool {
        match way {
            Way::Request => !self.requests_cut,
            Way::Reply => !self.replies_cut,
        }
    }

    fn delay(&self, way: Way) -> Delay {
        match way {
            Way::Request => self.request_delay,
            Way::Reply => self.reply_delay,
        }
    }
}

/// A delay drawn for each chunk, uniformly in `min..=max` (true time): the simulator's `latency`
/// fault draws each message's delay the same way (madsim's `send_latency`). A chunk is never
/// delivered before the one read before it (a TCP stream keeps its order), so a long draw holds
/// back the chunks behind it, as a retransmission does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Delay {
    pub min: Duration,
    pub max: Duration,
}

impl Delay {
    pub fn fixed(delay: Duration) -> Delay {
        Delay { min: delay, max: delay }
    }

    /// The delay for one chunk; `random` is any 64-bit draw.
    fn draw(self, random: u64) -> Duration {
        let span = self.max.saturating_sub(self.min).as_nanos() as u64;
        if span == 0 { self.min } else { self.min + Duration::from_nanos(random % (span + 1)) }
    }
}

/// A listening proxy to one upstream address. Dropping it closes the listener and every
/// connection through it.
pub struct LinkProxy {
    addr: SocketAddr,
    state: watch::Sender<LinkState>,
    accepting: tokio::task::JoinHandle<()>,
}

impl LinkProxy {
    /// Listens on 127.0.0.1 (a free port) and forwards each connection to `upstream`. Must be
    /// called inside a tokio runtime; the proxy's tasks run on it.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<LinkProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (state, watching) = watch::channel(LinkState::default());
        let accepting = tokio::spawn(accept(listener, upstream, watching));
        Ok(LinkProxy { addr, state, accepting })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the link lets through now.
    pub fn state(&self) -> LinkState {
        *self.state.borrow()
    }

    /// Nothing crosses, either way, until [`LinkProxy::heal`].
    pub fn cut(&self) {
        self.state.send_modify(|s| (s.requests_cut, s.replies_cut) = (true, true));
    }

    /// Requests still reach the server (and take effect); its replies are held back.
    pub fn cut_replies(&self) {
        self.state.send_modify(|s| s.replies_cut = true);
    }

    /// Both ways open again; what was held back is delivered, in order.
    pub fn heal(&self) {
        self.state.send_modify(|s| (s.requests_cut, s.replies_cut) = (false, false));
    }

    /// Every chunk read from now on is delivered `delay` later than it was read, each way.
    pub fn set_delay(&self, delay: Duration) {
        self.state.send_modify(|s| (s.request_delay, s.reply_delay) = (Delay::fixed(delay), Delay::fixed(delay)));
    }

    /// Closes every connection open now; new ones are accepted as before.
    pub fn drop_connections(&self) {
        self.state.send_modify(|s| s.generation += 1);
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        // The connections' tasks live in the accept task's JoinSet: aborting it ends them too.
        self.accepting.abort();
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, state: watch::Receiver<LinkState>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                connections.spawn(forward(client, TcpStream::connect(upstream), state.clone(), None));
            }
            // Reap finished connections so a long run does not keep their results.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One connection: a pump each way, until both ends close or the connections are dropped. With
/// a `protocol`, the connection is read as that client protocol, so that the link can lose the
/// replies its state names.
async fn forward(
    client: TcpStream,
    connect: impl std::future::Future<Output = std::io::Result<TcpStream>>,
    mut state: watch::Receiver<LinkState>,
    protocol: Option<Protocol>,
) {
    let generation = state.borrow().generation;
    let server = tokio::select! {
        connected = connect => match connected {
            Ok(server) => server,
            Err(_) => return,
        },
        () = dropped(&mut state, generation) => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let reading = protocol.map(|protocol| (protocol, Arc::new(Mutex::new(Reader::new(protocol)))));
    let requests = pump(client_read, server_write, state.clone(), Way::Request, reading.clone());
    let replies = pump(server_read, client_write, state.clone(), Way::Reply, reading);
    tokio::select! {
        _ = async { tokio::join!(requests, replies) } => {}
        () = dropped(&mut state, generation) => {}
    }
}

/// Returns once the link's connections of `generation` are to be dropped.
async fn dropped(state: &mut watch::Receiver<LinkState>, generation: u64) {
    let _ = state.wait_for(|s| s.generation != generation).await;
}

/// Copies one way. The reader waits while the way is cut, so the sender's kernel buffers fill as
/// in a partition; the writer delivers each chunk no sooner than its delay after it was read, so
/// pipelined chunks keep their spacing. With `reading` (a connection read as its protocol) the
/// reader cuts the stream into the protocol's units: a request's is noted, a reply the link loses
/// now is skipped or ends the connection in its place ([`zk_frames`], [`h2_frames`]): the writer
/// closes its end and delivers nothing more.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    state: watch::Receiver<LinkState>,
    way: Way,
    reading: Option<(Protocol, Arc<Mutex<Reader>>)>,
) {
    // `None`: the reply in hand is lost with the connection.
    let (chunks, mut queued) = mpsc::unbounded_channel::<(Instant, Option<Vec<u8>>)>();
    let mut read_state = state.clone();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut units = reading.as_ref().map(|(protocol, _)| Units::new(*protocol, way));
        loop {
            if read_state.wait_for(|s| s.open(way)).await.is_err() {
                return;
            }
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let (Some((_, reader)), Some(units)) = (&reading, &mut units) else {
                if chunks.send((Instant::now(), Some(buf[..n].to_vec()))).is_err() {
                    return;
                }
                continue;
            };
            // Whole packets only: a reply is judged before a byte of it is sent on.
            let lost = read_state.borrow().lost_replies;
            let mut out = Vec::new();
            let mut closed = false;
            for packet in units.push(&buf[..n]) {
                let mut connection = reader.lock().expect("connection reading lock poisoned");
                match way {
                    Way::Request => connection.request(&packet),
                    Way::Reply => match connection.reply(&packet, lost) {
                        Verdict::Deliver => {}
                        Verdict::Skip => continue,
                        Verdict::Close => {
                            closed = true;
                            break;
                        }
                    },
                }
                out.extend_from_slice(&packet);
            }
            if !out.is_empty() && chunks.send((Instant::now(), Some(out))).is_err() {
                return;
            }
            if closed {
                let _ = chunks.send((Instant::now(), None));
                return;
            }
        }
    };
    let mut write_state = state;
    let mut random = Random::new();
    let writer = async move {
        while let Some((read_at, chunk)) = queued.recv().await {
            let Some(chunk) = chunk else { break };
            let delay = write_state.borrow().delay(way).draw(random.next());
            tokio::time::sleep_until(read_at + delay).await;
            if write_state.wait_for(|s| s.open(way)).await.is_err() || to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

/// Draws for the delays: real runs are not replayable, so any well-mixed sequence does
/// (splitmix64, a fresh start per pump from a process-wide counter).
struct Random(u64);

impl Random {
    fn new() -> Random {
        static PUMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let pump = PUMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Random(u64::from(std::process::id()) << 32 ^ pump.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The links of one node to each peer address, as [`serve_transparent`] applies them: for the
/// peer at `ip`, requests are what this node sends there and replies what comes back.
#[derive(Clone, Default)]
pub struct Links {
    peers: Arc<Mutex<BTreeMap<Ipv4Addr, watch::Sender<LinkState>>>>,
}

impl Links {
    /// Sets the link to `peer`; connections open now take it from their next chunk.
    pub fn set(&self, peer: Ipv4Addr, state: LinkState) {
        self.sender(peer).send_replace(state);
    }

    fn sender(&self, peer: Ipv4Addr) -> watch::Sender<LinkState> {
        let mut peers = self.peers.lock().expect("link table lock poisoned");
        peers.entry(peer).or_insert_with(|| watch::channel(LinkState::default()).0).clone()
    }
}

/// Serves the connections nftables redirected to `listener` (each keeps the address it was
/// opened to, read back with `SO_ORIGINAL_DST`): each goes on to that address through a socket
/// marked `mark`, so that the node's redirect rule lets it pass, under `links`' state for that
/// peer; one to the port of `reads` is read as that client protocol. Runs until the listener
/// fails.
pub async fn serve_transparent(listener: TcpListener, links: Links, mark: u32, reads: Option<(u16, Protocol)>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                let Some(upstream) = original_destination(&client) else { continue };
                let state = links.sender(*upstream.ip()).subscribe();
                let protocol = reads.filter(|(port, _)| *port == upstream.port()).map(|(_, protocol)| protocol);
                connections.spawn(forward(client, connect_marked(upstream, mark), state, protocol));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The address a redirected connection was opened to (netfilter's `SO_ORIGINAL_DST`).
fn original_destination(stream: &TcpStream) -> Option<SocketAddrV4> {
    use std::os::fd::AsRawFd;
    // Linux's value (linux/netfilter_ipv4.h); the libc crate does not export it.
    const SO_ORIGINAL_DST: libc::c_int = 80;
    // SAFETY: sockaddr_in is plain data; getsockopt writes at most `len` bytes into it.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_IP,
            SO_ORIGINAL_DST,
            (&mut addr as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    };
    (rc == 0)
        .then(|| SocketAddrV4::new(Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)), u16::from_be(addr.sin_port)))
}

async fn connect_marked(upstream: SocketAddrV4, mark: u32) -> std::io::Result<TcpStream> {
    use std::os::fd::AsRawFd;
    let socket = tokio::net::TcpSocket::new_v4()?;
    // SAFETY: setsockopt reads `size_of::<u32>()` bytes from a live u32.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MARK,
            (&mark as *const u32).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    socket.connect(SocketAddr::V4(upstream)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upstream that echoes what it reads.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut r, mut w) = stream.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    async fn round_trip(stream: &mut TcpStream, message: &[u8], within: Duration) -> Option<Vec<u8>> {
        stream.write_all(message).await.unwrap();
        let mut got = vec![0u8; message.len()];
        tokio::time::timeout(within, stream.read_exact(&mut got)).await.ok()?.ok()?;
        Some(got)
    }

    #[test]
    fn an_open_link_carries_both_ways() {
        runtime().block_on(async {
            let proxy = LinkProxy::start(echo_server().await).await.unwrap();
            let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut stream, b"ping", Duration::from_secs(2)).await.as_deref(), Some(&b"ping"[..]));
        });
    }

    #[test]
    fn a_cut_holds_bytes_back_and_the_heal_delivers_them_in_order() {
        runtime().block_on(async {
            let proxy = LinkProxy::start(echo_server().await).await.unwrap();
            let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
            assert!(round_trip(&mut stream, b"a", Duration::from_secs(2)).await.is_some());
            proxy.cut();
            assert_eq!(round_trip(&mut stream, b"bc", Duration::from_millis(300)).await, None, "nothing crosses a cut");
            proxy.heal();
            let mut got = vec![0u8; 2];
            tokio::time::timeout(Duration::from_secs(2), stream.read_exact(&mut got)).await.unwrap().unwrap();
            assert_eq!(got, b"bc");
        });
    }

    #[test]
    fn a_cut_of_replies_lets_requests_through() {
        runtime().block_on(async {
            // An upstream that counts what it receives and answers nothing.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let upstream = listener.local_addr().unwrap();
            let (seen, mut got) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = stream.read(&mut buf).await {
                    seen.send(buf[..n].to_vec()).unwrap();
                }
            });
            let proxy = LinkProxy::start(upstream).await.unwrap();
            proxy.cut_replies();
            let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
            stream.write_all(b"put").await.unwrap();
            let arrived = tokio::time::timeout(Duration::from_secs(2), got.recv()).await.unwrap().unwrap();
            assert_eq!(arrived, b"put");
        });
    }

    #[test]
    fn a_delay_slows_every_trip() {
        runtime().block_on(async {
            let proxy = LinkProxy::start(echo_server().await).await.unwrap();
            proxy.set_delay(Duration::from_millis(150));
            let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
            let start = Instant::now();
            assert!(round_trip(&mut stream, b"x", Duration::from_secs(2)).await.is_some());
            // 150 ms to the server, 150 ms back.
            assert!(start.elapsed() >= Duration::from_millis(300), "{:?}", start.elapsed());
        });
    }

    #[test]
    fn a_delay_range_draws_within_its_bounds_and_a_fixed_one_is_exact() {
        let range = Delay { min: Duration::from_millis(100), max: Duration::from_millis(800) };
        let mut random = Random::new();
        let draws: Vec<Duration> = (0..2000).map(|_| range.draw(random.next())).collect();
        assert!(draws.iter().all(|d| (range.min..=range.max).contains(d)));
        // Both ends of the range are reached (to a tenth of it).
        assert!(draws.iter().any(|d| *d < Duration::from_millis(170)));
        assert!(draws.iter().any(|d| *d > Duration::from_millis(730)));
        assert_eq!(Delay::fixed(Duration::from_millis(30)).draw(random.next()), Duration::from_millis(30));
    }

    #[test]
    fn dropping_connections_closes_them_and_new_ones_still_work() {
        runtime().block_on(async {
            let proxy = LinkProxy::start(echo_server().await).await.unwrap();
            let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
            assert!(round_trip(&mut stream, b"a", Duration::from_secs(2)).await.is_some());
            proxy.drop_connections();
            let mut buf = [0u8; 1];
            let closed = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await.unwrap();
            assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
            let mut again = TcpStream::connect(proxy.addr()).await.unwrap();
            assert!(round_trip(&mut again, b"b", Duration::from_secs(2)).await.is_some());
        });
    }
}

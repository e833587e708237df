//! One client's TCP link to one server, through this process, where the nemesis can cut it (both
//! ways or replies only), slow it down, or drop its connections.
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

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What a link lets through now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkState {
    /// Bytes from the client are held back.
    pub requests_cut: bool,
    /// Bytes from the server are held back.
    pub replies_cut: bool,
    /// Added to every chunk's trip, each way (true time).
    pub delay: Duration,
    /// Bumped to drop every open connection (the client sees its connection closed, as when a
    /// server drops its clients).
    pub generation: u64,
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
        self.state.send_modify(|s| s.delay = delay);
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
                connections.spawn(forward(client, upstream, state.clone()));
            }
            // Reap finished connections so a long run does not keep their results.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One connection: a pump each way, until both ends close or the connections are dropped.
async fn forward(client: TcpStream, upstream: SocketAddr, mut state: watch::Receiver<LinkState>) {
    let generation = state.borrow().generation;
    let server = tokio::select! {
        connected = TcpStream::connect(upstream) => match connected {
            Ok(server) => server,
            Err(_) => return,
        },
        () = dropped(&mut state, generation) => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let requests = pump(client_read, server_write, state.clone(), Way::Request);
    let replies = pump(server_read, client_write, state.clone(), Way::Reply);
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
/// pipelined chunks keep their spacing.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, state: watch::Receiver<LinkState>, way: Way) {
    let (chunks, mut queued) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let mut read_state = state.clone();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            if read_state.wait_for(|s| s.open(way)).await.is_err() {
                return;
            }
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if chunks.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    };
    let mut write_state = state;
    let writer = async move {
        while let Some((read_at, chunk)) = queued.recv().await {
            let delay = write_state.borrow().delay;
            tokio::time::sleep_until(read_at + delay).await;
            if write_state.wait_for(|s| s.open(way)).await.is_err() || to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
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

//! A client's view of its ZooKeeper session's renewals: every connection the zookeeper-client
//! crate opens goes through a tap in the same process, which forwards the bytes unchanged and
//! journals each request that renews the session on a server ([`crate::zk_frames::SessionWire`]): a
//! ping as a `lease_keep_alive`, a `closeSession` as the owner's `lease_revoke`, any other
//! request (and a reconnection) as a `session_touch`,
//! completed by the reply (`ok`, or `fail` when the session had expired) or left unknown
//! (`info`) when the connection ends first. The crate pings by itself and says nothing of it;
//! without this the lease checkers could not know a session's last renewal.
//!
//! Times: the invocation is journaled before the request's bytes go on, its completion as the
//! reply arrives, before the client reads it, so each renewal lies inside its recorded span. The
//! cost is one more loopback hop each way (the tap listens on 127.0.0.1 in the client's own
//! network namespace; its connections to the servers go where the client's would, through a
//! link proxy when the run has one).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use coordsim_checker::history::{Call, OpId, Return};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::journal::Journal;
use crate::zk_frames::{Answer, Packets, SessionWire, Touch, WireKey};

/// Taps in front of a client's ZooKeeper servers; dropping it stops them and their connections.
pub struct Taps {
    /// The taps' addresses, in the order of the servers they stand for: what the client connects to.
    pub addresses: Vec<String>,
    tasks: JoinSet<()>,
}

impl Taps {
    /// Listens on 127.0.0.1 for each of `servers` (`host:port`), forwarding to it and journaling
    /// the session renewals of `node`.
    pub async fn start(servers: &[String], node: &str, journal: Arc<Journal>) -> std::io::Result<Taps> {
        let mut tasks = JoinSet::new();
        let mut addresses = Vec::new();
        for server in servers {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            addresses.push(listener.local_addr()?.to_string());
            tasks.spawn(serve(listener, server.clone(), node.to_string(), journal.clone()));
        }
        Ok(Taps { addresses, tasks })
    }
}

impl Drop for Taps {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

async fn serve(listener: TcpListener, server: String, node: String, journal: Arc<Journal>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                connections.spawn(relay(client, server.clone(), node.clone(), journal.clone()));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One connection's journaling: the wire's state and the operation of each touch in flight.
struct Tap {
    wire: SessionWire,
    /// The operation of each touch in flight, and whether it closes the session.
    ops: BTreeMap<WireKey, (OpId, bool)>,
    node: String,
    journal: Arc<Journal>,
}

impl Tap {
    fn sent(&mut self, touch: Touch) {
        let lease = touch.session;
        let call = match touch.request {
            "ping" => Call::LeaseKeepAlive { lease },
            // The owner ends its session: a revocation, as etcd's LeaseRevoke (the session's
            // ephemeral nodes go at once, as a revoked lease's keys do).
            "closeSession" => Call::LeaseRevoke { lease },
            request => Call::SessionTouch { lease, request: request.to_string() },
        };
        let closes = matches!(call, Call::LeaseRevoke { .. });
        let op = self.journal.invoke(&self.node, call);
        self.ops.insert(touch.key, (op, closes));
    }

    fn answered(&mut self, key: WireKey, answer: Answer) {
        let Some((op, closes)) = self.ops.remove(&key) else { return };
        match answer {
            Answer::Renewed { .. } if closes => self.journal.ok(&self.node, op, Return::LeaseRevoked),
            Answer::Renewed { timeout_ms } => {
                self.journal.ok(&self.node, op, Return::LeaseKeptAlive { ttl_ms: timeout_ms })
            }
            Answer::Expired => self.journal.fail(&self.node, op, "session expired"),
            Answer::Unknown(why) => self.journal.info(&self.node, op, why),
        }
    }

    fn closed(&mut self) {
        for key in self.wire.closed() {
            if let Some((op, _)) = self.ops.remove(&key) {
                self.journal.info(&self.node, op, "connection closed with the request in flight");
            }
        }
    }
}

async fn relay(client: TcpStream, server: String, node: String, journal: Arc<Journal>) {
    let Ok(upstream) = TcpStream::connect(&server).await else { return };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = upstream.into_split();
    let tap = Arc::new(Mutex::new(Tap { wire: SessionWire::default(), ops: BTreeMap::new(), node, journal }));
    // Either way ending ends the connection: a ZooKeeper client never half-closes.
    tokio::select! {
        () = pump(client_read, server_write, tap.clone(), Way::Request) => {}
        () = pump(server_read, client_write, tap.clone(), Way::Reply) => {}
    }
    tap.lock().expect("tap lock poisoned").closed();
}

#[derive(Clone, Copy)]
enum Way {
    Request,
    Reply,
}

/// Copies one way, journaling each packet's touch or answer before its bytes go on.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, tap: Arc<Mutex<Tap>>, way: Way) {
    let mut packets = Packets::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        {
            let mut tap = tap.lock().expect("tap lock poisoned");
            for packet in packets.push(&buf[..n]) {
                match way {
                    Way::Request => {
                        if let Some(touch) = tap.wire.request(&packet) {
                            tap.sent(touch);
                        }
                    }
                    Way::Reply => {
                        if let Some((key, answer)) = tap.wire.reply(&packet) {
                            tap.answered(key, answer);
                        }
                    }
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk_frames::tests::packet;
    use coordsim_checker::history::Event;

    /// A fake server speaks the protocol's framing; the tap between it and a fake client must
    /// pass every byte unchanged and journal the session's renewals with their outcomes.
    #[tokio::test]
    async fn the_tap_passes_bytes_unchanged_and_journals_each_renewal() {
        let dir = std::env::temp_dir().join(format!("coordsim-tap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c1.jsonl");
        let journal = Arc::new(Journal::create(&path, crate::journal::monotonic_ns(), 1000).unwrap());
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = server.local_addr().unwrap().to_string();
        let taps = Taps::start(&[server_addr], "c1", journal.clone()).await.unwrap();
        let connect_response = packet(
            &[&0i32.to_be_bytes()[..], &4000i32.to_be_bytes(), &77i64.to_be_bytes(), &0i32.to_be_bytes()].concat(),
        );
        let ping_reply = packet(&[&(-2i32).to_be_bytes()[..], &5i64.to_be_bytes(), &0i32.to_be_bytes()].concat());
        let create_reply = packet(&[&1i32.to_be_bytes()[..], &6i64.to_be_bytes(), &(-112i32).to_be_bytes()].concat());
        let replies = [connect_response.clone(), ping_reply.clone(), create_reply.clone()].concat();
        let connect_request = packet(
            &[
                &0i32.to_be_bytes()[..],
                &0i64.to_be_bytes(),
                &4000i32.to_be_bytes(),
                &0i64.to_be_bytes(),
                &0i32.to_be_bytes(),
            ]
            .concat(),
        );
        let ping = packet(&[(-2i32).to_be_bytes(), 11i32.to_be_bytes()].concat());
        let create = packet(&[1i32.to_be_bytes(), 1i32.to_be_bytes()].concat());
        let get_data = packet(&[2i32.to_be_bytes(), 4i32.to_be_bytes()].concat());
        let requests = [connect_request.clone(), ping.clone(), create.clone(), get_data.clone()].concat();
        let server_side = {
            let (requests, replies) = (requests.clone(), replies.clone());
            let (connect_request, connect_response) = (connect_request.clone(), connect_response.clone());
            tokio::spawn(async move {
                let (mut conn, _) = server.accept().await.unwrap();
                let mut got = vec![0u8; connect_request.len()];
                conn.read_exact(&mut got).await.unwrap();
                conn.write_all(&replies[..connect_response.len()]).await.unwrap();
                let mut rest = vec![0u8; requests.len() - got.len()];
                conn.read_exact(&mut rest).await.unwrap();
                got.extend(rest);
                conn.write_all(&replies[connect_response.len()..]).await.unwrap();
                got
            })
        };
        let mut client = TcpStream::connect(&taps.addresses[0]).await.unwrap();
        client.write_all(&connect_request).await.unwrap();
        let mut got = vec![0u8; connect_response.len()];
        client.read_exact(&mut got).await.unwrap();
        client.write_all(&requests[connect_request.len()..]).await.unwrap();
        let mut rest = vec![0u8; replies.len() - got.len()];
        client.read_exact(&mut rest).await.unwrap();
        got.extend(rest);
        assert_eq!(got, replies, "the server's bytes reach the client unchanged");
        assert_eq!(server_side.await.unwrap(), requests, "the client's bytes reach the server unchanged");
        drop(client);
        // The tap sees the close and ends the getData it never saw answered.
        for _ in 0..200 {
            if std::fs::read_to_string(&path).unwrap().lines().count() >= 6 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let entries = crate::journal::read(&path).unwrap();
        let events: Vec<Event> = entries.into_iter().map(|e| e.event).collect();
        assert_eq!(
            events,
            vec![
                Event::Invoke { op: 1000, call: Call::LeaseKeepAlive { lease: 77 } },
                Event::Invoke { op: 1001, call: Call::SessionTouch { lease: 77, request: "create".into() } },
                Event::Invoke { op: 1002, call: Call::SessionTouch { lease: 77, request: "getData".into() } },
                Event::Ok { op: 1000, ret: Return::LeaseKeptAlive { ttl_ms: 4000 } },
                Event::Fail { op: 1001, error: "session expired".into() },
                Event::Info { op: 1002, error: "connection closed with the request in flight".into() },
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

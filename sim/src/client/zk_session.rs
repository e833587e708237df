//! A ZooKeeper session as the Java client keeps it, and the connection states Apache Curator
//! derives from it, for the built-in ZooKeeper recipes.
//!
//! The client (`org.apache.zookeeper.ClientCnxn`, 3.8): once connected with a negotiated session
//! timeout T, its read timeout is 2T/3 and its connect timeout T/n for n servers
//! (`onConnected`); it pings when it has sent nothing for half the read timeout, and gives the
//! connection up when it has heard nothing for the read timeout, or at once when the server
//! closes it (a server outside a quorum closes every client connection: see
//! `crate::server::zk::SYNC_LIMIT`). Then it tries the next server, one attempt per connect
//! timeout with a random pause below 1 s between attempts (`startConnect`), sending the session
//! id; the server validates it with the leader, and answers either the session (connected
//! again) or "expired", the only way the Java client learns of an expiry: it never expires a
//! session on its own.
//!
//! Curator (`ConnectionStateManager`, 5.x) names what the recipe sees: CONNECTED, SUSPENDED
//! (ZooKeeper's Disconnected), RECONNECTED, LOST (Expired), and with its default
//! `simulatedSessionExpirationPercent` of 100 declares LOST on its own once SUSPENDED has lasted
//! a whole session timeout. Its `ConnectionStateErrorPolicy` says which states end a recipe's
//! hold: `StandardConnectionStateErrorPolicy` (the default) SUSPENDED and LOST,
//! `SessionConnectionStateErrorPolicy` LOST only (`[lock] connection_state_error_policy`).
//! Without a policy the recipe is a plain ZooKeeper client's: no simulated expiry, a hold ends
//! only when the ensemble says the session expired.
//!
//! Every state change is recorded as an `Event::Connection` of the client; every ping as a
//! keepalive of the session's lease.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, ConnectionState, Event, Return};

use super::session::{SessionEnd, State};
use super::zk::ZkClient;
use super::{Client, Session};
use crate::clock::LocalTime;
use crate::recorder::Recorder;
use crate::scenario::{ConnectionStateErrorPolicy, KeepAliveMode};

/// Java's cap on the time between pings (`ClientCnxn.MAX_SEND_PING_INTERVAL`).
const MAX_PING_INTERVAL: Duration = Duration::from_secs(10);
/// Java's random pause before each reconnection attempt after the first (`startConnect`).
const RECONNECT_PAUSE_MAX_MS: u64 = 1000;

/// The session's timers, from the negotiated timeout and the number of servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkTimers {
    /// Nothing heard for this long: the connection is given up (2/3 of the session timeout).
    pub read: Duration,
    /// A ping goes out after this long without one (half the read timeout, at most 10 s).
    pub ping: Duration,
    /// Each reconnection attempt's budget (the session timeout over the number of servers).
    pub connect: Duration,
}

impl ZkTimers {
    pub fn new(session_ms: u64, servers: usize) -> ZkTimers {
        let read = Duration::from_millis((session_ms * 2 / 3).max(1));
        ZkTimers {
            read,
            ping: (read / 2).min(MAX_PING_INTERVAL),
            connect: Duration::from_millis((session_ms / servers.max(1) as u64).max(1)),
        }
    }
}

impl Session {
    /// Creates a ZooKeeper session of `ttl_ms` through a client connected to a random server,
    /// and keeps it (pings, reconnections) in the background. Records the creation as a lease
    /// grant of `node` and every connection state. `None` if no server created it in time.
    pub async fn open_zookeeper(
        client: &Client,
        recorder: &Recorder,
        node: &str,
        ttl_ms: u64,
        policy: Option<ConnectionStateErrorPolicy>,
    ) -> Option<(Session, ZkClient)> {
        let mut zk = ZkClient::new(client, 0);
        let op = recorder.invoke(node, Call::LeaseGrant { ttl_ms });
        let (lease, ttl_ms) = match zk.create_session(ttl_ms, Duration::from_millis(ttl_ms)).await {
            Ok(granted) => granted,
            Err(error) => {
                recorder.info(node, op, error.to_string());
                return None;
            }
        };
        recorder.ok(node, op, Return::LeaseGranted { lease, ttl_ms });
        zk.session = lease;
        zk.link().connected();
        let state = Arc::new(State::default());
        let connection = Connection {
            zk: zk.clone(),
            recorder: recorder.clone(),
            node: node.to_string(),
            lease,
            ttl_ms,
            timers: ZkTimers::new(ttl_ms, client.servers.len()),
            simulated_expiry: policy.is_some(),
        };
        connection.record(ConnectionState::Connected, None);
        let keepalive = madsim::task::spawn(connection.run(state.clone()));
        let session = Session {
            lease,
            ttl_ms,
            keepalive_mode: KeepAliveMode::Background,
            state,
            keepalive,
            give_up_at_suspended: policy == Some(ConnectionStateErrorPolicy::Standard),
            hold_mark: Mutex::new(0),
        };
        Some((session, zk))
    }
}

/// The background task of one ZooKeeper session: the connection's state machine.
struct Connection {
    zk: ZkClient,
    recorder: Recorder,
    node: String,
    lease: i64,
    ttl_ms: u64,
    timers: ZkTimers,
    /// Curator's simulated expiry (any Curator policy).
    simulated_expiry: bool,
}

/// What one ping learned.
enum Pinged {
    Alive,
    Expired,
    Failed(String),
}

impl Connection {
    async fn run(self, state: Arc<State>) {
        let end = self.until_end(&state).await;
        *state.end.lock().expect("session lock poisoned") = Some(end);
        state.ended.notify_waiters();
    }

    async fn until_end(&self, state: &State) -> SessionEnd {
        let clock = self.zk.client().clock().clone();
        loop {
            let (server, reason) = match self.connected(&clock).await {
                Ok(dropped) => dropped,
                Err(end) => return end,
            };
            self.recorder.record(
                &self.node,
                Event::Connection { state: ConnectionState::Suspended, server: Some(server), reason: Some(reason) },
            );
            *state.suspended.lock().expect("session lock poisoned") = true;
            *state.suspensions.lock().expect("session lock poisoned") += 1;
            state.ended.notify_waiters();
            let suspended_at = clock.now();
            if let Err(end) = self.reconnect(&clock, suspended_at).await {
                return end;
            }
            self.record(ConnectionState::Reconnected, None);
            *state.suspended.lock().expect("session lock poisoned") = false;
            state.ended.notify_waiters();
        }
    }

    /// Connected: pings until the connection is given up (the server and the reason) or the
    /// session expires.
    async fn connected(&self, clock: &crate::clock::Clock) -> Result<(String, String), SessionEnd> {
        let link = self.zk.link();
        let mut last_ping = clock.now();
        // Any drop from here on ends this connection, one during a ping included (a recipe's
        // request that failed meanwhile): its requests wait until the session is validated again.
        let drops = link.drops();
        loop {
            if link.drops() > drops {
                if link.expired() {
                    return Err(self.lost(SessionEnd::LeaseGone));
                }
                return Ok((link.last_dropped_server(), link.last_drop()));
            }
            let heard = link.last_heard().unwrap_or(last_ping);
            let silent_at = heard.plus(self.timers.read);
            if clock.now() >= silent_at {
                let silence = heard.until(clock.now()).as_millis();
                let server = self.zk.connected_server();
                self.zk.give_up_connection();
                return Ok((server.clone(), format!("nothing heard from {server} for {silence} ms")));
            }
            let ping_at = last_ping.plus(self.timers.ping);
            if clock.now() >= ping_at {
                last_ping = clock.now();
                let budget = clock.now().until(silent_at).max(Duration::from_millis(1));
                let server = self.zk.connected_server();
                match self.ping(false, budget).await {
                    Pinged::Alive => continue,
                    Pinged::Expired => return Err(self.lost(SessionEnd::LeaseGone)),
                    Pinged::Failed(reason) => return Ok((server, reason)),
                }
            }
            // Sleep to the next ping or the read timeout, whichever is first, unless another
            // request finds the connection gone before.
            let server = self.zk.connected_server();
            let wake = std::pin::pin!(clock.sleep_until(ping_at.min(silent_at)));
            let dropped = std::pin::pin!(link.dropped_since(drops));
            if let futures::future::Either::Right(_) = futures::future::select(wake, dropped).await {
                if link.expired() {
                    return Err(self.lost(SessionEnd::LeaseGone));
                }
                return Ok((server, link.last_drop()));
            }
        }
    }

    /// SUSPENDED: tries the next server until one takes the session (Ok) or it is lost.
    async fn reconnect(&self, clock: &crate::clock::Clock, suspended_at: LocalTime) -> Result<(), SessionEnd> {
        let lost_at = suspended_at.plus(Duration::from_millis(self.ttl_ms));
        let mut first = true;
        loop {
            if !first {
                use madsim::rand::Rng as _;
                let pause = madsim::rand::thread_rng().gen_range(0..RECONNECT_PAUSE_MAX_MS);
                let pause = std::pin::pin!(clock.sleep(Duration::from_millis(pause)));
                // Cut short by Curator's simulated expiry, or by a server telling a request of the
                // recipe's that the session expired.
                let expiry = std::pin::pin!(async {
                    if self.simulated_expiry {
                        clock.sleep_until(lost_at).await
                    } else {
                        std::future::pending::<()>().await
                    }
                });
                let told = std::pin::pin!(self.zk.link().dropped_since(u64::MAX));
                let ends = futures::future::select(expiry, told);
                futures::future::select(pause, ends).await;
            }
            first = false;
            // A request of the recipe's, answered "session expired" by a server it reached.
            if self.zk.link().expired() {
                return Err(self.lost(SessionEnd::LeaseGone));
            }
            if self.simulated_expiry && clock.now() >= lost_at {
                return Err(self.lost(SessionEnd::SimulatedExpiry));
            }
            let budget = match self.simulated_expiry {
                true => self.timers.connect.min(clock.now().until(lost_at)).max(Duration::from_millis(1)),
                false => self.timers.connect,
            };
            match self.ping(true, budget).await {
                Pinged::Alive => {
                    self.zk.link().connected();
                    return Ok(());
                }
                Pinged::Expired => return Err(self.lost(SessionEnd::LeaseGone)),
                Pinged::Failed(_) => {}
            }
        }
    }

    /// One ping through the connected server (`validate`: a reconnection), recorded as a
    /// keepalive of the lease.
    async fn ping(&self, validate: bool, budget: Duration) -> Pinged {
        let op = self.recorder.invoke(&self.node, Call::LeaseKeepAlive { lease: self.lease });
        match self.zk.ping(validate, budget).await {
            Ok(true) => {
                self.recorder.ok(&self.node, op, Return::LeaseKeptAlive { ttl_ms: self.ttl_ms });
                Pinged::Alive
            }
            Ok(false) => {
                self.recorder.fail(&self.node, op, "session expired");
                Pinged::Expired
            }
            Err(error) => {
                let reason = error.to_string();
                self.recorder.info(&self.node, op, reason.clone());
                Pinged::Failed(reason)
            }
        }
    }

    fn lost(&self, end: SessionEnd) -> SessionEnd {
        self.record(ConnectionState::Lost, Some(end.to_string()));
        end
    }

    fn record(&self, state: ConnectionState, reason: Option<String>) {
        let server = match state {
            ConnectionState::Lost => None,
            _ => Some(self.zk.connected_server()),
        };
        self.recorder.record(&self.node, Event::Connection { state, server, reason });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_follow_the_java_client() {
        // A 6 s session on 3 servers: read timeout 4 s, a ping every 2 s, 2 s per attempt.
        let timers = ZkTimers::new(6000, 3);
        assert_eq!(timers.read, Duration::from_millis(4000));
        assert_eq!(timers.ping, Duration::from_millis(2000));
        assert_eq!(timers.connect, Duration::from_millis(2000));
        // Pings at most every 10 s.
        assert_eq!(ZkTimers::new(60_000, 3).ping, Duration::from_secs(10));
    }
}

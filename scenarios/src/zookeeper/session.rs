//! A ZooKeeper session as zookeeper-client 0.11 (the crate this API mirrors) sees it: a session (a
//! lease of the simulated store) kept alive by pings, and the client's view of it, the session
//! state. The rules and timers are the crate's (`src/session/mod.rs` at 0.11.2: `serve_session`,
//! `start`, `calc_tick_timeout`, `reset_timeout`), not Java's ClientCnxn, whose read timeout is
//! two thirds of the session timeout and which never expires a session on its own:
//!
//! - a tick is 1/20 of the session timeout, or 1/8 of the connector's connection timeout when one
//!   is set at most 3/5 of the session timeout; the connection timeout is 8 ticks (2/5 of the
//!   session timeout by default), a ping goes out after 3 ticks without a send (at most 10 s);
//! - `SyncConnected` while something is heard; `Disconnected` once nothing was heard for the
//!   connection timeout. Requests in flight then fail (`Custom`: "no response from connection in
//!   N ms", not ConnectionLoss, which is for a connection the server closed); requests made while
//!   disconnected wait for the next connection and go out on it, or fail when the session ends;
//! - reconnecting, each attempt lasts at most the connection timeout; `Expired` when a server
//!   says the session is gone, or, on the client's own account, when no attempt connected within
//!   7/5 of the session timeout since the last thing heard (ZOOKEEPER-4508); `Closed` after
//!   `close`. Expired and Closed are terminal.
//!
//! Measured against the real crate on a real ensemble (real/tests/zookeeper_session_states.rs):
//! a 4 s session cut off from every server is Disconnected within 1.6 s and Expired by the client
//! within 5.6-6.4 s (the real crate's last attempt runs to its end when the connection itself
//! opens, as through the test's proxy; the simulator's partitions drop the connection's packets,
//! so the attempt ends at the deadline).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, ConnectionState, Event, Return};
use coordsim_sim::clock::LocalTime;
use coordsim_sim::harness::ClientEnv;
use coordsim_sim::rpc::ClientReply;
use tokio::sync::Notify;

/// zookeeper-client's `SessionState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionState {
    Disconnected,
    SyncConnected,
    AuthFailed,
    ConnectedReadOnly,
    Expired,
    Closed,
}

impl SessionState {
    /// Expired, closed or failed: no request will succeed again.
    pub fn is_terminated(self) -> bool {
        matches!(self, SessionState::AuthFailed | SessionState::Expired | SessionState::Closed)
    }
}

/// The session's timers, derived as zookeeper-client 0.11 derives them (`calc_tick_timeout`,
/// `reset_timeout`) from the session timeout and the connector's connection timeout (zero: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timers {
    /// No receipt for this long: the connection is given up (8 ticks).
    pub connection: Duration,
    /// No send for this long: a ping goes out (3 ticks, at most 10 s).
    pub ping: Duration,
    /// No connection within this long since the last receipt: the client expires the session.
    pub client_expiry: Duration,
}

impl Timers {
    pub(crate) fn new(session: Duration, connection: Duration) -> Timers {
        let tick = if connection.is_zero() || connection > session * 3 / 5 { session / 20 } else { connection / 8 };
        let tick = tick.max(Duration::from_millis(1));
        Timers {
            connection: 8 * tick,
            ping: (3 * tick).min(Duration::from_secs(10)),
            client_expiry: session.max(8 * tick) * 7 / 5,
        }
    }
}

/// The session state, shared by the client, its watchers and the ping task.
pub(crate) struct Shared {
    state: Mutex<SessionState>,
    /// Local (monotonic) time something was last heard from a server.
    last_heard: Mutex<LocalTime>,
    changed: Notify,
    pub(crate) timers: Timers,
}

impl Shared {
    pub(crate) fn new(timers: Timers, now: LocalTime) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(SessionState::SyncConnected),
            last_heard: Mutex::new(now),
            changed: Notify::new(),
            timers,
        })
    }

    pub(crate) fn state(&self) -> SessionState {
        *self.state.lock().expect("session state lock")
    }

    /// A server answered something at local time `at`.
    pub(crate) fn heard(&self, at: LocalTime) {
        let mut last = self.last_heard.lock().expect("session time lock");
        *last = (*last).max(at);
    }

    fn last_heard(&self) -> LocalTime {
        *self.last_heard.lock().expect("session time lock")
    }

    /// Moves to `state`, unless the session already ended.
    pub(crate) fn set(&self, state: SessionState) {
        let mut current = self.state.lock().expect("session state lock");
        if current.is_terminated() || *current == state {
            return;
        }
        *current = state;
        drop(current);
        self.changed.notify_waiters();
    }

    /// Waits until the session is no longer connected (disconnected, expired or closed).
    pub(crate) async fn until_not_connected(&self) {
        let mut state = self.state();
        while state == SessionState::SyncConnected {
            state = self.changed_from(state).await;
        }
    }

    /// Waits until the session is connected or has ended; returns the state.
    pub(crate) async fn until_connected_or_ended(&self) -> SessionState {
        let mut state = self.state();
        while state == SessionState::Disconnected {
            state = self.changed_from(state).await;
        }
        state
    }

    /// Waits until the state differs from `seen`; returns the new one.
    pub(crate) async fn changed_from(&self, seen: SessionState) -> SessionState {
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let state = self.state();
            if state != seen {
                return state;
            }
            notified.await;
        }
    }
}

/// Keeps the session until it ends: pings while connected (each recorded as a keepalive of the
/// session's lease), gives the connection up when nothing was heard for the connection timeout,
/// then tries again, one attempt per connection timeout, until a server answers (connected again,
/// or expired if the session is gone there) or the client's own expiry deadline passes.
pub(crate) async fn keep_session(
    client: coordsim_sim::client::Client,
    env: ClientEnv,
    lease: i64,
    shared: Arc<Shared>,
) {
    let timers = shared.timers;
    loop {
        // Connected: a ping every ping interval; disconnected the moment the connection timeout
        // has passed since the last receipt, whatever the ping in flight is doing (the crate
        // checks it on every tick).
        while shared.state() == SessionState::SyncConnected {
            let mut pinged = std::pin::pin!(async {
                env.clock.sleep(timers.ping).await;
                ping(&client, &env, lease, &shared, timers.connection).await
            });
            let ended = loop {
                // Re-armed from the latest receipt: an answer to a request counts too.
                let lost_at = shared.last_heard().plus(timers.connection);
                let lost = std::pin::pin!(env.clock.sleep_until(lost_at));
                match futures::future::select(pinged.as_mut(), lost).await {
                    futures::future::Either::Left((ended, _)) => break ended,
                    futures::future::Either::Right(_)
                        if env.clock.now() >= shared.last_heard().plus(timers.connection) =>
                    {
                        set(&shared, &env, SessionState::Disconnected);
                        // The ping in flight still ends (answered late, or at its budget), so
                        // its record in the history is complete.
                        break pinged.await;
                    }
                    futures::future::Either::Right(_) => {}
                }
            };
            if let Some(ended) = ended {
                set(&shared, &env, ended);
                return;
            }
        }
        if shared.state().is_terminated() {
            return;
        }
        // Reconnecting: attempts until one is answered or the client's expiry deadline.
        let deadline = shared.last_heard().plus(timers.client_expiry);
        loop {
            let started = env.clock.now();
            if started >= deadline {
                set(&shared, &env, SessionState::Expired);
                return;
            }
            let budget = timers.connection.min(started.until(deadline));
            match ping(&client, &env, lease, &shared, budget).await {
                Some(ended) => {
                    set(&shared, &env, ended);
                    return;
                }
                None if env.clock.now() < shared.last_heard().plus(timers.connection) => {
                    set(&shared, &env, SessionState::SyncConnected);
                    break;
                }
                None => env.clock.sleep_until(started.plus(budget)).await,
            }
            if shared.state().is_terminated() {
                return;
            }
        }
    }
}

/// Moves the session to `state` and records the change in Curator's names, as the built-in
/// recipes' sessions do (`Event::Connection`): Disconnected is SUSPENDED, connected again is
/// RECONNECTED, Expired is LOST.
fn set(shared: &Shared, env: &ClientEnv, state: SessionState) {
    let before = shared.state();
    shared.set(state);
    if shared.state() == before {
        return;
    }
    let named = match state {
        SessionState::Disconnected => ConnectionState::Suspended,
        SessionState::SyncConnected | SessionState::ConnectedReadOnly => ConnectionState::Reconnected,
        SessionState::Expired => ConnectionState::Lost,
        SessionState::AuthFailed | SessionState::Closed => return,
    };
    let reason = Some(format!("zookeeper-client: {state:?}"));
    env.recorder.record(&env.name, Event::Connection { state: named, server: None, reason });
}

/// One ping (recorded as a keepalive of the session's lease), waiting at most `budget`. Returns
/// the state the session ends in if a server says it is gone.
async fn ping(
    client: &coordsim_sim::client::Client,
    env: &ClientEnv,
    lease: i64,
    shared: &Shared,
    budget: Duration,
) -> Option<SessionState> {
    if shared.state().is_terminated() {
        return Some(shared.state());
    }
    let op = env.recorder.invoke(&env.name, Call::LeaseKeepAlive { lease });
    match client.keep_alive(lease, budget).await {
        Ok(ClientReply::KeptAlive { ttl_ms }) => {
            env.recorder.ok(&env.name, op, Return::LeaseKeptAlive { ttl_ms });
            shared.heard(env.clock.now());
            None
        }
        Ok(ClientReply::LeaseNotFound) => {
            env.recorder.fail(&env.name, op, "session expired");
            Some(SessionState::Expired)
        }
        Ok(other) => {
            env.recorder.info(&env.name, op, format!("{other:?}"));
            None
        }
        Err(error) => {
            env.recorder.info(&env.name, op, error.to_string());
            None
        }
    }
}

/// zookeeper-client's `StateWatcher`: the session's state changes, as they happen.
pub struct StateWatcher {
    pub(crate) shared: Arc<Shared>,
    pub(crate) seen: SessionState,
}

impl StateWatcher {
    /// The current state (and marks it seen).
    pub fn state(&mut self) -> SessionState {
        self.seen = self.shared.state();
        self.seen
    }

    /// Waits for the next change of state and returns it; after a terminal state, returns it
    /// again at once.
    pub async fn changed(&mut self) -> SessionState {
        if self.seen.is_terminated() {
            return self.seen;
        }
        self.seen = self.shared.changed_from(self.seen).await;
        self.seen
    }

    /// The current state, without marking it seen.
    pub fn peek_state(&self) -> SessionState {
        self.shared.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_follow_the_crate_for_a_4s_session() {
        let timers = Timers::new(Duration::from_secs(4), Duration::ZERO);
        assert_eq!(timers.connection, Duration::from_millis(1600));
        assert_eq!(timers.ping, Duration::from_millis(600));
        assert_eq!(timers.client_expiry, Duration::from_millis(5600));
        // A connection timeout of at most 3/5 of the session sets the tick; a longer one is ignored.
        let short = Timers::new(Duration::from_secs(4), Duration::from_millis(800));
        assert_eq!((short.connection, short.ping), (Duration::from_millis(800), Duration::from_millis(300)));
        assert_eq!(Timers::new(Duration::from_secs(4), Duration::from_secs(3)), timers);
        // Pings at most every 10 s, however long the session.
        assert_eq!(Timers::new(Duration::from_secs(600), Duration::ZERO).ping, Duration::from_secs(10));
    }
}

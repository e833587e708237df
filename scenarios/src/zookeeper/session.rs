//! A ZooKeeper session as its client sees it: a session (a lease of the simulated store) pinged
//! every third of its timeout, and the client's view of it, the session state.
//!
//! States, as ZooKeeper's client moves through them (ClientCnxn; zookeeper-client's
//! `SessionState`): `SyncConnected` while pings are answered; `Disconnected` once no ping was
//! answered for two thirds of the timeout (the client's read timeout), pinging on; back to
//! `SyncConnected` when one is answered again; `Expired` only when the ensemble says the session
//! is gone (a client never expires its session on its own; Curator's simulated expiry is a
//! recipe's choice); `Closed` after `close`. Expired and Closed are terminal.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
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

/// The session state, shared by the client, its watchers and the ping task.
pub(crate) struct Shared {
    state: Mutex<SessionState>,
    changed: Notify,
}

impl Shared {
    pub(crate) fn new() -> Arc<Shared> {
        Arc::new(Shared { state: Mutex::new(SessionState::SyncConnected), changed: Notify::new() })
    }

    pub(crate) fn state(&self) -> SessionState {
        *self.state.lock().expect("session state lock")
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

/// Pings the session every third of `timeout` until the ensemble says it is gone or the client
/// is closed. Each ping is recorded as a keepalive of the session's lease. The client is
/// disconnected the moment its read timeout (two thirds of `timeout`) has passed since the last
/// answer, whatever the ping in flight is doing (ZooKeeper's ClientCnxn checks it on every turn
/// of its send loop).
pub(crate) async fn keep_pinging(
    client: coordsim_sim::client::Client,
    env: ClientEnv,
    lease: i64,
    timeout: Duration,
    shared: Arc<Shared>,
) {
    let interval = timeout / 3;
    let read_timeout = timeout * 2 / 3;
    let mut last_answer = env.clock.now();
    loop {
        let disconnect_at = last_answer.plus(read_timeout);
        watching(&env, &shared, disconnect_at, env.clock.sleep(interval)).await;
        if shared.state().is_terminated() {
            return;
        }
        let op = env.recorder.invoke(&env.name, Call::LeaseKeepAlive { lease });
        match watching(&env, &shared, disconnect_at, client.keep_alive(lease, interval)).await {
            Ok(ClientReply::KeptAlive { ttl_ms }) => {
                env.recorder.ok(&env.name, op, Return::LeaseKeptAlive { ttl_ms });
                last_answer = env.clock.now();
                shared.set(SessionState::SyncConnected);
            }
            Ok(ClientReply::LeaseNotFound) => {
                env.recorder.fail(&env.name, op, "session expired");
                shared.set(SessionState::Expired);
                return;
            }
            Ok(other) => env.recorder.info(&env.name, op, format!("{other:?}")),
            Err(error) => env.recorder.info(&env.name, op, error.to_string()),
        }
    }
}

/// Awaits `future`; if the local clock reaches `disconnect_at` first, the session is
/// disconnected from that moment on.
async fn watching<F: std::future::Future>(
    env: &ClientEnv,
    shared: &Shared,
    disconnect_at: coordsim_sim::clock::LocalTime,
    future: F,
) -> F::Output {
    let mut future = std::pin::pin!(future);
    if shared.state() == SessionState::SyncConnected {
        let timer = std::pin::pin!(env.clock.sleep_until(disconnect_at));
        match futures::future::select(future.as_mut(), timer).await {
            futures::future::Either::Left((output, _)) => return output,
            futures::future::Either::Right(_) => shared.set(SessionState::Disconnected),
        }
    }
    future.await
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

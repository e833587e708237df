//! A session: a lease granted by the cluster and kept alive in the background every TTL/3
//! (etcd client/v3/concurrency/session.go). The session ends — and every lock held under it
//! must be considered lost — when the cluster says the lease is gone, or when no keepalive was
//! acknowledged for a whole TTL by the client's clock.
//!
//! A client that renews from its own request loop instead ([`KeepAliveMode::BetweenHolds`])
//! sends no keepalive while it works in its critical section: the keepalive task stands still
//! from [`Session::hold_started`] to [`Session::hold_ended`]. A hold longer than the TTL then
//! outlives the lease, and the client cannot even learn it before the hold is over
//! (self-eviction). A watched client deadline still ends the session on time: it is a look at
//! the client's own clock, not a request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use tokio::sync::Notify;

use super::Client;
use crate::clock::{ClockKind, LocalTime};
use crate::recorder::Recorder;
use crate::rpc::ClientReply;
use crate::scenario::KeepAliveMode;
use crate::store::{Command, CommandResponse, LeaseId};

/// A client-side lease deadline: the client stops acting `ms` after sending its last
/// acknowledged keepalive, as `clock` measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientDeadline {
    pub ms: u64,
    pub clock: ClockKind,
}

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// A keepalive was answered "lease not found": the cluster expired or revoked it.
    LeaseGone,
    /// No keepalive was acknowledged within the client's deadline (by default the TTL), by the
    /// client's clock.
    KeepAliveTimeout,
    /// ZooKeeper with Curator: the connection stayed SUSPENDED for a whole session timeout, and
    /// Curator's simulated expiry declared the session LOST on the client.
    SimulatedExpiry,
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionEnd::LeaseGone => "session expired: the cluster no longer has the lease",
            SessionEnd::KeepAliveTimeout => "session expired: no keepalive acknowledged within the TTL",
            SessionEnd::SimulatedExpiry => {
                "session LOST: SUSPENDED for a whole session timeout (Curator's simulated expiry)"
            }
        })
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) end: Mutex<Option<SessionEnd>>,
    /// Notified when the session ends, and (ZooKeeper) at each connection state change.
    pub(super) ended: Notify,
    /// ZooKeeper: the connection is SUSPENDED now, and how many times it has been.
    pub(super) suspended: Mutex<bool>,
    pub(super) suspensions: Mutex<u64>,
    /// Between holds only: the client is in its critical section and sends no keepalive.
    holding: Mutex<bool>,
    released: Notify,
}

impl State {
    fn holding(&self) -> bool {
        *self.holding.lock().expect("session lock poisoned")
    }

    /// Waits until the client leaves its critical section.
    async fn wait_released(&self) {
        loop {
            let notified = self.released.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.holding() {
                return;
            }
            notified.await;
        }
    }
}

pub struct Session {
    pub lease: LeaseId,
    pub ttl_ms: u64,
    pub(super) keepalive_mode: KeepAliveMode,
    pub(super) state: Arc<State>,
    pub(super) keepalive: madsim::task::JoinHandle<()>,
    /// ZooKeeper with Curator's standard policy: SUSPENDED ends a hold, not only LOST.
    pub(super) give_up_at_suspended: bool,
    /// The suspension count when the current hold started.
    pub(super) hold_mark: Mutex<u64>,
}

impl Session {
    /// Grants a lease with `ttl_ms` and starts keeping it alive. Records the grant and every
    /// keepalive as operations of `node`. `None` if the grant got no answer in time.
    /// `deadline`: `Some` for a client that stops acting exactly that long after its last
    /// acknowledged keepalive (by the clock it names); `None` for etcd clientv3's behaviour: the session
    /// ends when the cluster answers "lease not found", or when a keepalive attempt finds that
    /// none was acknowledged for a TTL. `keepalive`: renewed in the background, or only
    /// between holds.
    pub async fn open(
        client: &Client,
        recorder: &Recorder,
        node: &str,
        ttl_ms: u64,
        deadline: Option<ClientDeadline>,
        ignore_failures: bool,
        keepalive: KeepAliveMode,
    ) -> Option<Session> {
        // The lease can be no older than the moment the grant was sent: count from there.
        let deadline_clock = deadline.map_or(ClockKind::Monotonic, |d| d.clock);
        let sent = client.clock().read(deadline_clock);
        let op = recorder.invoke(node, Call::LeaseGrant { ttl_ms });
        let granted = client.write(Command::LeaseGrant { id: 0, ttl_ms }, Duration::from_millis(ttl_ms)).await;
        let (lease, ttl_ms) = match granted {
            Ok(CommandResponse::LeaseGrant { id, ttl_ms, .. }) => (id, ttl_ms),
            Ok(other) => {
                recorder.fail(node, op, format!("{other:?}"));
                return None;
            }
            Err(error) => {
                recorder.info(node, op, error.to_string());
                return None;
            }
        };
        recorder.ok(node, op, Return::LeaseGranted { lease, ttl_ms });
        let state = Arc::new(State::default());
        let keeper = KeepAlive {
            client: client.clone(),
            recorder: recorder.clone(),
            node: node.to_string(),
            lease,
            ttl_ms,
            deadline_ms: deadline.map_or(ttl_ms, |d| d.ms),
            deadline_clock,
            watch_deadline: deadline.is_some(),
            ignore_failures,
            last_ack_sent: sent,
        };
        let keepalive_mode = keepalive;
        let keepalive = madsim::task::spawn(keeper.run(state.clone()));
        Some(Session {
            lease,
            ttl_ms,
            keepalive_mode,
            state,
            keepalive,
            give_up_at_suspended: false,
            hold_mark: Mutex::new(0),
        })
    }

    /// The client enters its critical section: between holds only, keepalives stop until
    /// [`Session::hold_ended`].
    pub fn hold_started(&self) {
        *self.hold_mark.lock().expect("session lock poisoned") =
            *self.state.suspensions.lock().expect("session lock poisoned");
        if self.keepalive_mode == KeepAliveMode::BetweenHolds {
            *self.state.holding.lock().expect("session lock poisoned") = true;
        }
    }

    /// The client is back from its critical section: an overdue keepalive goes out at once.
    pub fn hold_ended(&self) {
        *self.state.holding.lock().expect("session lock poisoned") = false;
        self.state.released.notify_waiters();
    }

    /// `Some(reason)` once the session has ended.
    pub fn ended(&self) -> Option<SessionEnd> {
        self.state.end.lock().expect("session lock poisoned").clone()
    }

    /// Waits until the session ends.
    pub async fn wait_end(&self) -> SessionEnd {
        loop {
            let notified = self.state.ended.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(end) = self.ended() {
                return end;
            }
            notified.await;
        }
    }

    /// Why the current hold must end, if it must: the session ended, or (ZooKeeper under
    /// Curator's standard error policy) the connection has been SUSPENDED since the hold began.
    pub fn hold_lost(&self) -> Option<String> {
        if let Some(end) = self.ended() {
            return Some(end.to_string());
        }
        let suspended = *self.state.suspended.lock().expect("session lock poisoned");
        let mark = *self.hold_mark.lock().expect("session lock poisoned");
        let since = *self.state.suspensions.lock().expect("session lock poisoned") != mark;
        (self.give_up_at_suspended && (suspended || since))
            .then(|| "connection SUSPENDED: Curator's standard error policy gives the lock up".to_string())
    }

    /// Waits until the current hold must end (see [`Session::hold_lost`]).
    pub async fn wait_hold_lost(&self) -> String {
        loop {
            let notified = self.state.ended.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(reason) = self.hold_lost() {
                return reason;
            }
            notified.await;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keepalive.abort();
    }
}

/// The background keepalive loop of one session.
struct KeepAlive {
    client: Client,
    recorder: Recorder,
    node: String,
    lease: LeaseId,
    ttl_ms: u64,
    /// How long after `last_ack_sent` the client keeps believing in the lease, by `deadline_clock`.
    deadline_ms: u64,
    deadline_clock: ClockKind,
    /// Whether the client watches that deadline continuously (a client with a local lease
    /// deadline), or only notices it when a keepalive attempt ends (etcd clientv3's default).
    watch_deadline: bool,
    /// The `ignore_keepalive_failure` bug switch: failed keepalives never end the session.
    ignore_failures: bool,
    /// When the last acknowledged keepalive (or the grant) was sent, by `deadline_clock`: the
    /// server extended the lease no earlier than that.
    last_ack_sent: LocalTime,
}

impl KeepAlive {
    async fn run(mut self, state: Arc<State>) {
        let end = self.until_end(&state).await;
        *state.end.lock().expect("session lock poisoned") = Some(end);
        state.ended.notify_waiters();
    }

    /// Keeps the lease alive every TTL/3 until the cluster says it is gone or the client's own
    /// deadline passes. A watched deadline is checked continuously, not only between
    /// keepalives, so the client stops acting at the moment its clock says so
    /// (docs/cases/06).
    async fn until_end(&mut self, state: &State) -> SessionEnd {
        let clock = self.client.clock().clone();
        let by_deadline_clock = || clock.read(self.deadline_clock);
        let past = |deadline: LocalTime| clock.sleep_until_on(self.deadline_clock, deadline);
        // Three keepalives per TTL (etcd), or per client deadline when that is shorter; the
        // interval is timed on the monotonic clock, as every client library's ticker is.
        let interval = Duration::from_millis((self.ttl_ms.min(self.deadline_ms) / 3).max(1));
        let mut next = clock.now().plus(interval);
        loop {
            let deadline = self.last_ack_sent.plus_ms(self.deadline_ms);
            // Without a watched deadline it is only checked after an attempt (below).
            let watched = if self.watch_deadline && !self.ignore_failures { deadline } else { LocalTime(i64::MAX) };
            if by_deadline_clock() >= watched {
                return SessionEnd::KeepAliveTimeout;
            }
            if clock.now() < next {
                let tick = std::pin::pin!(clock.sleep_until(next));
                let expire = std::pin::pin!(past(watched));
                futures::future::select(tick, expire).await;
                continue;
            }
            if state.holding() {
                // The client's loop is busy in its critical section: the keepalive waits for it.
                let released = std::pin::pin!(state.wait_released());
                let expire = std::pin::pin!(past(watched));
                futures::future::select(released, expire).await;
                continue;
            }
            next = clock.now().plus(interval);
            let sent = by_deadline_clock();
            let op = self.recorder.invoke(&self.node, Call::LeaseKeepAlive { lease: self.lease });
            let call = std::pin::pin!(self.client.keep_alive(self.lease, interval));
            let expire = std::pin::pin!(past(watched));
            let reply = match futures::future::select(call, expire).await {
                futures::future::Either::Left((reply, _)) => reply,
                futures::future::Either::Right(((), _)) => {
                    self.recorder.info(&self.node, op, "client deadline passed while waiting for the reply");
                    return SessionEnd::KeepAliveTimeout;
                }
            };
            match reply {
                Ok(ClientReply::KeptAlive { ttl_ms }) => {
                    self.recorder.ok(&self.node, op, Return::LeaseKeptAlive { ttl_ms });
                    self.last_ack_sent = sent;
                }
                Ok(ClientReply::LeaseNotFound) => {
                    self.recorder.fail(&self.node, op, "lease not found");
                    if !self.ignore_failures {
                        return SessionEnd::LeaseGone;
                    }
                }
                Ok(other) => self.recorder.info(&self.node, op, format!("{other:?}")),
                Err(error) => self.recorder.info(&self.node, op, error.to_string()),
            }
            // Against the deadline as this attempt left it: an acknowledgement just received
            // moved it (checking the one computed before the attempt ended sessions whose
            // renewal had just succeeded, a false expiry `spurious_expiry` caught).
            if by_deadline_clock() >= self.last_ack_sent.plus_ms(self.deadline_ms) && !self.ignore_failures {
                return SessionEnd::KeepAliveTimeout;
            }
        }
    }
}

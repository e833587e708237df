//! A session: a lease granted by the cluster and kept alive in the background every TTL/3
//! (etcd client/v3/concurrency/session.go). The session ends — and every lock held under it
//! must be considered lost — when the cluster says the lease is gone, or when no keepalive was
//! acknowledged for a whole TTL by the client's clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use tokio::sync::Notify;

use super::Client;
use crate::recorder::Recorder;
use crate::rpc::ClientReply;
use crate::store::{Command, CommandResponse, LeaseId};

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// A keepalive was answered "lease not found": the cluster expired or revoked it.
    LeaseGone,
    /// No keepalive was acknowledged for a whole TTL (by the client's clock).
    KeepAliveTimeout,
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionEnd::LeaseGone => "session expired: the cluster no longer has the lease",
            SessionEnd::KeepAliveTimeout => {
                "session expired: no keepalive acknowledged within the TTL"
            }
        })
    }
}

#[derive(Default)]
struct State {
    end: Mutex<Option<SessionEnd>>,
    ended: Notify,
}

pub struct Session {
    pub lease: LeaseId,
    pub ttl_ms: u64,
    state: Arc<State>,
    keepalive: madsim::task::JoinHandle<()>,
}

impl Session {
    /// Grants a lease with `ttl_ms` and starts keeping it alive. Records the grant and every
    /// keepalive as operations of `node`. `None` if the grant got no answer in time.
    pub async fn open(
        client: &Client,
        recorder: &Recorder,
        node: &str,
        ttl_ms: u64,
    ) -> Option<Session> {
        let op = recorder.invoke(node, Call::LeaseGrant { ttl_ms });
        let granted = client
            .write(
                Command::LeaseGrant { id: 0, ttl_ms },
                Duration::from_millis(ttl_ms),
            )
            .await;
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
        let keepalive = madsim::task::spawn(keep_alive(
            client.clone(),
            recorder.clone(),
            node.to_string(),
            lease,
            ttl_ms,
            state.clone(),
        ));
        Some(Session {
            lease,
            ttl_ms,
            state,
            keepalive,
        })
    }

    /// `Some(reason)` once the session has ended.
    pub fn ended(&self) -> Option<SessionEnd> {
        self.state
            .end
            .lock()
            .expect("session lock poisoned")
            .clone()
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
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keepalive.abort();
    }
}

async fn keep_alive(
    client: Client,
    recorder: Recorder,
    node: String,
    lease: LeaseId,
    ttl_ms: u64,
    state: Arc<State>,
) {
    let interval = Duration::from_millis((ttl_ms / 3).max(1));
    let mut last_ack = client.clock().now();
    let end = loop {
        client.clock().sleep(interval).await;
        let sent = client.clock().now();
        let op = recorder.invoke(&node, Call::LeaseKeepAlive { lease });
        match client.keep_alive(lease, interval).await {
            Ok(ClientReply::KeptAlive { ttl_ms }) => {
                recorder.ok(&node, op, Return::LeaseKeptAlive { ttl_ms });
                last_ack = sent;
            }
            Ok(ClientReply::LeaseNotFound) => {
                recorder.fail(&node, op, "lease not found");
                break SessionEnd::LeaseGone;
            }
            Ok(other) => recorder.info(&node, op, format!("{other:?}")),
            Err(error) => recorder.info(&node, op, error.to_string()),
        }
        if last_ack.ms_until(client.clock().now()) >= ttl_ms {
            break SessionEnd::KeepAliveTimeout;
        }
    };
    *state.end.lock().expect("session lock poisoned") = Some(end);
    state.ended.notify_waiters();
}

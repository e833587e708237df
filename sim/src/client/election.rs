//! The client side of etcd's Election service: campaign (recorded as a `lock` operation on the
//! election's name: leadership is a lock whose token is the term), proclaim, leader, observe,
//! resign (recorded as `unlock`).

use std::time::Duration;

use coordsim_checker::history::{Call, Return};

use super::{Client, LockError, Session};
use crate::recorder::Recorder;
use crate::rpc::{ClientReply, ClientRequest, ElectionReply, ElectionRequest, LeaderKey};
use crate::store::{KeyValue, Revision, StoreError};

/// Campaigns for `name` with `value` until elected or the session ends; returns the leader key.
pub async fn campaign(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    value: &str,
) -> Result<LeaderKey, LockError> {
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits: 1 });
    // Like the Lock service, a campaign blocks on the server until it wins; the session's end
    // aborts it, and an attempt unanswered for a long time is made again (a lost request or
    // reply would otherwise wait for ever; the server's recipe reuses the key it made).
    let patience = Duration::from_secs(3600);
    let attempt = super::lock::LOCK_API_ATTEMPT;
    let request = ElectionRequest::Campaign { name: name.to_string(), lease: session.lease, value: value.to_string() };
    loop {
        if let Some(end) = session.ended() {
            recorder.info(node, op, end.to_string());
            return Err(LockError::SessionEnded(end));
        }
        let call = std::pin::pin!(client.call_with(ClientRequest::Election(request.clone()), attempt, patience));
        let ended = std::pin::pin!(session.wait_end());
        let reply = match futures::future::select(call, ended).await {
            futures::future::Either::Left((reply, _)) => reply,
            futures::future::Either::Right(_) => continue,
        };
        match reply {
            Ok(ClientReply::Election(ElectionReply::Elected(leader))) => {
                recorder.ok(node, op, Return::Locked { key: leader.key.clone(), token: leader.rev });
                return Ok(leader);
            }
            Ok(ClientReply::Election(ElectionReply::Failed { reason })) => {
                recorder.fail(node, op, reason.clone());
                return Err(LockError::Store(StoreError::InvalidRequest(reason)));
            }
            // Timeouts and lost leadership: campaign again (the key, if created, is reused).
            Ok(_) | Err(_) => {}
        }
    }
}

/// Gives up leadership. Records one `unlock` operation.
pub async fn resign(client: &Client, recorder: &Recorder, node: &str, leader: &LeaderKey, budget: Duration) {
    let op = recorder.invoke(node, Call::Unlock { name: leader.name.clone(), key: leader.key.clone() });
    let request = ClientRequest::Election(ElectionRequest::Resign { leader: leader.clone() });
    match client.call(request, budget).await {
        Ok(ClientReply::Election(ElectionReply::Resigned)) => recorder.ok(node, op, Return::Unlocked),
        Ok(other) => recorder.fail(node, op, format!("{other:?}")),
        Err(error) => recorder.info(node, op, error.to_string()),
    }
}

/// Replaces the leader's value: `Ok(false)` if the leadership is over.
pub async fn proclaim(client: &Client, leader: &LeaderKey, value: &str, budget: Duration) -> Result<bool, String> {
    let request = ClientRequest::Election(ElectionRequest::Proclaim { leader: leader.clone(), value: value.into() });
    match client.call(request, budget).await {
        Ok(ClientReply::Election(ElectionReply::Proclaimed)) => Ok(true),
        Ok(ClientReply::Election(ElectionReply::NotLeader)) => Ok(false),
        Ok(other) => Err(format!("{other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

/// The current leader's key-value (a linearizable read), `None` when nobody leads.
pub async fn leader(client: &Client, name: &str, budget: Duration) -> Result<Option<KeyValue>, String> {
    match client.call(ClientRequest::Election(ElectionRequest::Leader { name: name.into() }), budget).await {
        Ok(ClientReply::Election(ElectionReply::Leader(kv))) => Ok(kv),
        Ok(other) => Err(format!("{other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Waits (up to `wait`) for the leader to differ from `seen` and returns it.
pub async fn observe(
    client: &Client,
    name: &str,
    seen: Option<(Revision, Revision)>,
    wait: Duration,
) -> Result<Option<KeyValue>, String> {
    let request = ElectionRequest::Observe { name: name.into(), seen, wait_ms: wait.as_millis() as u64 };
    // Each attempt waits out the server's long-poll (see `Client::watch_with`).
    let attempt = wait + super::RPC_TIMEOUT;
    match client.call_with(ClientRequest::Election(request), attempt, wait * 2 + Duration::from_secs(1)).await {
        Ok(ClientReply::Election(ElectionReply::Leader(kv))) => Ok(kv),
        Ok(other) => Err(format!("{other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

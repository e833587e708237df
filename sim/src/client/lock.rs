//! Drives the etcd mutex recipe ([`crate::recipe::mutex`]) over the client connection and
//! records the `lock` and `unlock` operations.

use std::time::Duration;

use coordsim_checker::history::{Call, Event, Return};

use super::{Client, Session, SessionEnd, Unavailable};
use crate::recipe::EntryLifetime;
use crate::recipe::mutex::{EtcdMutex, MutexError, MutexInput, MutexStep};
use crate::recorder::Recorder;
use crate::rpc::{ClientReply, ClientRequest};
use crate::store::{Command, CommandResponse, DeleteRangeRequest, EventKind, KeyRange, StoreError};

/// How long one watch long-poll waits on the server before returning empty.
const WATCH_POLL: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error("{0}")]
    SessionEnded(SessionEnd),
    #[error(transparent)]
    Mutex(#[from] MutexError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("the store rejected a request: {0}")]
    Store(StoreError),
    /// A ZooKeeper read found no server within its budget.
    #[error("connection loss: {0}")]
    ConnectionLoss(String),
    #[error("ZooKeeper: {0}")]
    Zk(crate::zk::ZkError),
    #[error(transparent)]
    ZkLock(crate::recipe::zk_lock::ZkLockError),
}

/// Acquires the lock `name` under `session`; returns the holder key and the fencing token.
/// `lifetime` says whether the key is attached to the session's lease. Records one `lock`
/// operation of `node`: `ok` with the token, `fail` when the lock certainly was not granted,
/// `info` when the cluster stopped answering.
pub async fn lock(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    lifetime: EntryLifetime,
) -> Result<(String, i64), LockError> {
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits: 1 });
    let budget = Duration::from_millis(session.ttl_ms);
    let (mut mutex, mut step) = EtcdMutex::lock_for(name, session.lease, lifetime);
    let result = loop {
        if let Some(end) = session.ended() {
            break Err(LockError::SessionEnded(end));
        }
        step = match step {
            MutexStep::Txn(txn) => match client.write(Command::Txn(txn), budget).await {
                Ok(CommandResponse::Txn(response)) => mutex.step(MutexInput::Txn(response)),
                Ok(CommandResponse::Error(error)) => break Err(LockError::Store(error)),
                Ok(other) => unreachable!("a txn is answered by a txn response, got {other:?}"),
                Err(error) => break Err(error.into()),
            },
            MutexStep::Range(request) => match client.range(request, budget).await {
                Ok(Ok(response)) => mutex.step(MutexInput::Range(response)),
                Ok(Err(error)) => break Err(LockError::Store(error)),
                Err(error) => break Err(error.into()),
            },
            MutexStep::WaitDelete { key, from_revision } => {
                match wait_delete(client, session, &key, from_revision).await {
                    Ok(()) => {
                        let wakeup = Event::Wakeup { lock: name.to_string(), waiter: mutex.key().to_string() };
                        recorder.record(node, wakeup);
                        mutex.step(MutexInput::Deleted)
                    }
                    Err(end) => break Err(LockError::SessionEnded(end)),
                }
            }
            MutexStep::Acquired { key, token } => break Ok((key, token)),
            MutexStep::Failed(error) => break Err(error.into()),
        };
    };
    match &result {
        Ok((key, token)) => recorder.ok(node, op, Return::Locked { key: key.clone(), token: *token }),
        Err(LockError::Unavailable(error)) => {
            recorder.info(node, op, error.to_string());
            // Our key may exist: remove it so that it does not block the queue until the lease
            // expires (etcd's Lock does the same when its context is cancelled).
            let delete = DeleteRangeRequest { range: KeyRange::Key(mutex.key().to_string()), prev_kv: false };
            let _ = client.write(Command::DeleteRange(delete), budget).await;
        }
        Err(error) => recorder.fail(node, op, error.to_string()),
    }
    result
}

/// Waits until `key` is deleted at or after `from`, or the session ends.
async fn wait_delete(client: &Client, session: &Session, key: &str, mut from: i64) -> Result<(), SessionEnd> {
    loop {
        if let Some(end) = session.ended() {
            return Err(end);
        }
        match client.watch_once(KeyRange::Key(key.to_string()), from, WATCH_POLL).await {
            Ok(Ok(batch)) => {
                if batch.events.iter().any(|event| event.kind == EventKind::Delete) {
                    return Ok(());
                }
                let seen = batch.events.iter().map(|event| event.kv.mod_revision).max();
                from = from.max(seen.map_or(batch.header_revision + 1, |revision| revision + 1));
            }
            // History below `from` is gone: look at the queue again instead.
            Ok(Err(StoreError::Compacted { .. })) => return Ok(()),
            Ok(Err(_)) | Err(_) => {}
        }
    }
}

/// Releases the lock by deleting the holder key. Records one `unlock` operation.
pub async fn unlock(client: &Client, recorder: &Recorder, node: &str, name: &str, key: &str, budget: Duration) {
    let op = recorder.invoke(node, Call::Unlock { name: name.to_string(), key: key.to_string() });
    let delete = DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false };
    match client.write(Command::DeleteRange(delete), budget).await {
        Ok(CommandResponse::DeleteRange(_)) => recorder.ok(node, op, Return::Unlocked),
        Ok(other) => recorder.fail(node, op, format!("{other:?}")),
        Err(error) => recorder.info(node, op, error.to_string()),
    }
}

/// How long one Lock service request may wait for its answer before the client asks again.
/// Long enough that a waiter paused across a grant still finds the grant's reply when it
/// resumes (docs/cases/02 depends on it), short enough for the lock to move again after faults.
pub const LOCK_API_ATTEMPT: Duration = Duration::from_secs(30);

/// Acquires the lock `name` through the server's Lock service (etcd v3lock): the server runs
/// the mutex recipe and answers once we hold the lock. Records one `lock` operation, like
/// [`lock`]. A blocked call is retried (the recipe's create is idempotent for one session)
/// until the session ends.
pub async fn lock_api(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
) -> Result<(String, i64), LockError> {
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits: 1 });
    // The call blocks on the server until the lock is ours, however long the queue. A request or
    // reply lost to a crash or a partition would leave it waiting for ever (madsim drops such
    // messages silently; gRPC would see the connection break): ask again after a while, as a
    // client that notices a dead connection does. Asking again is safe: for one session the
    // server's recipe finds the key it created before and waits on the same predecessor.
    let attempt = LOCK_API_ATTEMPT;
    let patience = Duration::from_secs(3600);
    let request = ClientRequest::Lock { name: name.to_string(), lease: session.lease };
    loop {
        if let Some(end) = session.ended() {
            // The server may still grant the lock to the dead session: the outcome is unknown.
            recorder.info(node, op, end.to_string());
            return Err(LockError::SessionEnded(end));
        }
        let call = std::pin::pin!(client.call_with(request.clone(), attempt, patience));
        let ended = std::pin::pin!(session.wait_end());
        let reply = match futures::future::select(call, ended).await {
            futures::future::Either::Left((reply, _)) => reply,
            futures::future::Either::Right(_) => continue,
        };
        match reply {
            Ok(ClientReply::Locked { key, revision }) => {
                recorder.ok(node, op, Return::Locked { key: key.clone(), token: revision });
                return Ok((key, revision));
            }
            Ok(ClientReply::LockFailed { reason }) => {
                recorder.fail(node, op, reason.clone());
                return Err(LockError::Store(StoreError::InvalidRequest(reason)));
            }
            // Timeouts and lost leadership: ask again (the server-side waiter may still run).
            Ok(_) | Err(_) => {}
        }
    }
}

/// Releases a lock taken through the Lock service (etcd v3lock Unlock).
pub async fn unlock_api(client: &Client, recorder: &Recorder, node: &str, name: &str, key: &str, budget: Duration) {
    let op = recorder.invoke(node, Call::Unlock { name: name.to_string(), key: key.to_string() });
    match client.call(ClientRequest::Unlock { key: key.to_string() }, budget).await {
        Ok(ClientReply::Write(CommandResponse::DeleteRange(_))) => recorder.ok(node, op, Return::Unlocked),
        Ok(other) => recorder.fail(node, op, format!("{other:?}")),
        Err(error) => recorder.info(node, op, error.to_string()),
    }
}

/// Acquires the compare-and-swap lock on the key `name` (docs/cases/10: the herd-prone
/// pattern). Records one `lock` operation and a `wakeup` each time the watched key is deleted.
pub async fn lock_cas(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    backoff: Option<Duration>,
    lifetime: EntryLifetime,
) -> Result<(String, i64), LockError> {
    use crate::recipe::cas_lock::{CasLock, CasStep};
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits: 1 });
    let budget = Duration::from_millis(session.ttl_ms);
    let (lock, mut step) = CasLock::lock(name, node, lifetime.key_lease(session.lease));
    let result = loop {
        if let Some(end) = session.ended() {
            break Err(LockError::SessionEnded(end));
        }
        step = match step {
            CasStep::Txn(txn) => match client.write(Command::Txn(txn), budget).await {
                Ok(CommandResponse::Txn(response)) => lock.on_txn(response),
                Ok(CommandResponse::Error(error)) => break Err(LockError::Store(error)),
                Ok(other) => unreachable!("a txn is answered by a txn response, got {other:?}"),
                Err(error) => break Err(error.into()),
            },
            CasStep::WaitDelete { key, from_revision } => match wait_delete(client, session, &key, from_revision).await
            {
                Ok(()) => {
                    recorder.record(node, Event::Wakeup { lock: name.to_string(), waiter: node.to_string() });
                    if let Some(backoff) = backoff.filter(|b| !b.is_zero()) {
                        use madsim::rand::Rng as _;
                        let jitter = madsim::rand::thread_rng().gen_range(0..backoff.as_millis() as u64);
                        client.clock().sleep(Duration::from_millis(jitter)).await;
                    }
                    lock.retry()
                }
                Err(end) => break Err(LockError::SessionEnded(end)),
            },
            CasStep::Acquired { key, token } => break Ok((key, token)),
            CasStep::Failed(reason) => break Err(LockError::Mutex(MutexError::Protocol(reason))),
        };
    };
    match &result {
        Ok((key, token)) => recorder.ok(node, op, Return::Locked { key: key.clone(), token: *token }),
        Err(LockError::Unavailable(error)) => recorder.info(node, op, error.to_string()),
        Err(error) => recorder.fail(node, op, error.to_string()),
    }
    result
}

/// Releases the compare-and-swap lock: deletes the key if it is still ours.
pub async fn unlock_cas(client: &Client, recorder: &Recorder, node: &str, name: &str, token: i64, budget: Duration) {
    let op = recorder.invoke(node, Call::Unlock { name: name.to_string(), key: name.to_string() });
    let txn = crate::recipe::cas_lock::unlock(name, token);
    match client.write(Command::Txn(txn), budget).await {
        Ok(CommandResponse::Txn(_)) => recorder.ok(node, op, Return::Unlocked),
        Ok(other) => recorder.fail(node, op, format!("{other:?}")),
        Err(error) => recorder.info(node, op, error.to_string()),
    }
}

/// Takes one of the `permits` permits of the semaphore `name` (see
/// [`crate::recipe::semaphore`]); returns the holder key and its token. Records one `lock`
/// operation carrying `permits`, and a `wakeup` each time the watched key is deleted.
pub async fn lock_semaphore(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    permits: u32,
    lifetime: EntryLifetime,
) -> Result<(String, i64), LockError> {
    use crate::recipe::semaphore::{Semaphore, SemaphoreStep};
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits });
    let budget = Duration::from_millis(session.ttl_ms);
    let (mut semaphore, mut step) = Semaphore::acquire_for(name, session.lease, permits, lifetime);
    let result = loop {
        if let Some(end) = session.ended() {
            break Err(LockError::SessionEnded(end));
        }
        step = match step {
            SemaphoreStep::Txn(txn) => match client.write(Command::Txn(txn), budget).await {
                Ok(CommandResponse::Txn(response)) => semaphore.on_created(response),
                Ok(CommandResponse::Error(error)) => break Err(LockError::Store(error)),
                Ok(other) => unreachable!("a txn is answered by a txn response, got {other:?}"),
                Err(error) => break Err(error.into()),
            },
            SemaphoreStep::Range(request) => match client.range(request, budget).await {
                Ok(Ok(response)) => semaphore.on_counted(response),
                Ok(Err(error)) => break Err(LockError::Store(error)),
                Err(error) => break Err(error.into()),
            },
            SemaphoreStep::WaitDelete { key, from_revision } => {
                match wait_delete(client, session, &key, from_revision).await {
                    Ok(()) => {
                        recorder.record(node, Event::Wakeup { lock: name.to_string(), waiter: semaphore.key().into() });
                        semaphore.count()
                    }
                    Err(end) => break Err(LockError::SessionEnded(end)),
                }
            }
            SemaphoreStep::Acquired { key, token } => break Ok((key, token)),
            SemaphoreStep::Failed(reason) => break Err(LockError::Mutex(MutexError::Protocol(reason))),
        };
    };
    match &result {
        Ok((key, token)) => recorder.ok(node, op, Return::Locked { key: key.clone(), token: *token }),
        Err(LockError::Unavailable(error)) => {
            recorder.info(node, op, error.to_string());
            let delete = DeleteRangeRequest { range: KeyRange::Key(semaphore.key().to_string()), prev_kv: false };
            let _ = client.write(Command::DeleteRange(delete), budget).await;
        }
        Err(error) => recorder.fail(node, op, error.to_string()),
    }
    result
}

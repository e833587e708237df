//! Drives the etcd recipe cores ([`crate::recipe::EtcdLock`]: mutex, compare-and-swap lock,
//! semaphore) over the client connection with one loop, and records the `lock` and `unlock`
//! operations; and etcd's Lock service (v3lock), which runs the mutex on the server.

use std::time::Duration;

use coordsim_checker::history::{Call, Event, Return};

use super::{Client, Session, SessionEnd, Unavailable};
use crate::recipe::{EntryLifetime, EtcdInput, EtcdLock, EtcdRecipe, EtcdStep, RecipeError};
use crate::recorder::Recorder;
use crate::rpc::{ClientReply, ClientRequest};
use crate::scenario::Recipe;
use crate::store::{Command, CommandResponse, DeleteRangeRequest, EventKind, KeyRange, StoreError};

/// How long one watch long-poll waits on the server before returning empty.
const WATCH_POLL: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error("{0}")]
    SessionEnded(SessionEnd),
    #[error(transparent)]
    Recipe(#[from] RecipeError),
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

/// How a client takes an etcd lock with a recipe core of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EtcdLockConfig {
    /// `Recipe::EtcdMutex`, `EtcdCas` or `EtcdSemaphore`.
    pub recipe: Recipe,
    /// The semaphore's permits (1 for a lock).
    pub permits: u32,
    /// Whether the queue key is attached to the session's lease.
    pub lifetime: EntryLifetime,
    /// A random pause of up to this long after each wakeup before trying again (the jittered
    /// back-off of the compare-and-swap lock; spreads the retries, not the wakeups).
    pub backoff: Option<Duration>,
}

impl EtcdLockConfig {
    /// etcd's concurrency.Mutex with its key on the session's lease.
    pub const MUTEX: EtcdLockConfig =
        EtcdLockConfig { recipe: Recipe::EtcdMutex, permits: 1, lifetime: EntryLifetime::Session, backoff: None };
}

/// Acquires the lock `name` under `session` with the recipe core `config` names; returns the
/// holder key and the fencing token. Records one `lock` operation of `node`: `ok` with the
/// token, `fail` when the lock certainly was not granted, `info` when the cluster stopped
/// answering; and a `wakeup` each time the watched key is deleted.
pub async fn lock(
    client: &Client,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    config: EtcdLockConfig,
) -> Result<(String, i64), LockError> {
    let (mut core, mut step) =
        EtcdLock::start(config.recipe, name, node, session.lease, config.permits, config.lifetime)
            .unwrap_or_else(|| panic!("{:?} is not a client-side etcd lock", config.recipe));
    let call = Call::Lock { name: name.to_string(), lease: session.lease, permits: core.permits() };
    let op = recorder.invoke(node, call);
    let budget = Duration::from_millis(session.ttl_ms);
    let result = loop {
        if let Some(end) = session.ended() {
            break Err(LockError::SessionEnded(end));
        }
        step = match step {
            EtcdStep::Txn(txn) => match client.txn(txn, budget).await {
                Ok(Ok(response)) => core.step(EtcdInput::Txn(response)),
                Ok(Err(error)) => break Err(LockError::Store(error)),
                Err(error) => break Err(error.into()),
            },
            EtcdStep::Range(request) => match client.range(request, budget).await {
                Ok(Ok(response)) => core.step(EtcdInput::Range(response)),
                Ok(Err(error)) => break Err(LockError::Store(error)),
                Err(error) => break Err(error.into()),
            },
            EtcdStep::WaitDelete { key, from_revision } => {
                match wait_delete(client, session, &key, from_revision).await {
                    Ok(()) => {
                        recorder.record(node, Event::Wakeup { lock: name.to_string(), waiter: core.waiter(node) });
                        if let Some(backoff) = config.backoff.filter(|b| !b.is_zero()) {
                            use madsim::rand::Rng as _;
                            let jitter = madsim::rand::thread_rng().gen_range(0..backoff.as_millis() as u64);
                            client.clock().sleep(Duration::from_millis(jitter)).await;
                        }
                        core.step(EtcdInput::Deleted)
                    }
                    Err(end) => break Err(LockError::SessionEnded(end)),
                }
            }
            EtcdStep::Acquired { key, token } => break Ok((key, token)),
            EtcdStep::Failed(error) => break Err(error.into()),
        };
    };
    match &result {
        Ok((key, token)) => recorder.ok(node, op, Return::Locked { key: key.clone(), token: *token }),
        Err(LockError::Unavailable(error)) => {
            recorder.info(node, op, error.to_string());
            if let Some(key) = core.own_key() {
                let delete = DeleteRangeRequest { range: KeyRange::Key(key.to_string()), prev_kv: false };
                let _ = client.write(Command::DeleteRange(delete), budget).await;
            }
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

/// Releases a hold that `recipe`'s core took ([`EtcdLock::release`]). Records one `unlock`
/// operation: `ok` once the cluster applied it, `fail` if the store refused it, `info` if no
/// answer came.
pub async fn unlock(
    client: &Client,
    recorder: &Recorder,
    node: &str,
    name: &str,
    recipe: Recipe,
    (key, token): (&str, i64),
    budget: Duration,
) {
    let release =
        EtcdLock::release(recipe, key, token).unwrap_or_else(|| panic!("{recipe:?} is not a client-side etcd lock"));
    let op = recorder.invoke(node, Call::Unlock { name: name.to_string(), key: key.to_string() });
    match client.write(release, budget).await {
        Ok(refused @ CommandResponse::Error(_)) => recorder.fail(node, op, format!("{refused:?}")),
        Ok(_) => recorder.ok(node, op, Return::Unlocked),
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

//! Drives the ZooKeeper lock recipes ([`crate::recipe::zk_lock`]) over a [`ZkClient`] and
//! records the `lock` and `unlock` operations and every wakeup.

use std::time::Duration;

use coordsim_checker::history::{Call, Event, Return};

use super::zk::{PollError, ZkCallError, ZkClient};
use super::{LockError, Session, SessionEnd};
use crate::recipe::zk_lock::{ZkLock, ZkLockConfig, ZkLockInput, ZkLockStep};
use crate::recorder::Recorder;
use crate::store::Revision;
use crate::zk::{ANY_VERSION, CreateMode, WatchKind, ZkError};

/// How long one watch long-poll waits on the server before returning empty.
const WATCH_POLL: Duration = Duration::from_secs(1);

/// Acquires the ZooKeeper lock at the node `name` (created with its parents on first use) for
/// `session`; returns our lock node and the fencing token (its czxid). Records one `lock`
/// operation of `node` (`ok`, `fail`, or `info` when the cluster stopped answering) and a
/// `wakeup` each time a watch wakes the client.
pub async fn lock_zk(
    zk: &ZkClient,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    config: ZkLockConfig,
) -> Result<(String, i64), LockError> {
    let op = recorder.invoke(node, Call::Lock { name: name.to_string(), lease: session.lease, permits: 1 });
    let budget = Duration::from_millis(session.ttl_ms);
    let result = acquire(zk, session, recorder, node, name, config, budget).await;
    match &result {
        Ok((path, token)) => recorder.ok(node, op, Return::Locked { key: path.clone(), token: *token }),
        Err((error @ LockError::ConnectionLoss(_), ours)) => {
            recorder.info(node, op, error.to_string());
            // Our node may exist: remove it so that it does not block the queue until the session
            // ends (Curator deletes its node when an acquire fails).
            if let Some(path) = ours {
                let _ = guaranteed_delete(zk, session, path).await;
            }
        }
        Err((error, _)) => recorder.fail(node, op, error.to_string()),
    }
    result.map_err(|(error, _)| error)
}

async fn acquire(
    zk: &ZkClient,
    session: &Session,
    recorder: &Recorder,
    node: &str,
    name: &str,
    config: ZkLockConfig,
    budget: Duration,
) -> Result<(String, i64), (LockError, Option<String>)> {
    let tag = format!("{node}-{:x}", session.lease);
    let (mut recipe, mut step) = ZkLock::lock(name, &tag, config);
    loop {
        let ours = recipe.node().map(str::to_string);
        let fail =
            |error: LockError| -> Result<(String, i64), (LockError, Option<String>)> { Err((error, ours.clone())) };
        if let Some(end) = session.ended() {
            return fail(LockError::SessionEnded(end));
        }
        step = match step {
            // The node's data names its client (the candidate's identity, for an election).
            ZkLockStep::Create { prefix } => match zk.create(&prefix, node, config.lifetime.sequential_mode()).await {
                Ok((path, stat)) => recipe.step(ZkLockInput::Created { path, czxid: stat.czxid }),
                Err(ZkCallError::ConnectionLoss(_)) => recipe.step(ZkLockInput::CreateLost),
                // The first use of the lock: create the lock node (and its parents), then again.
                Err(ZkCallError::Zk(ZkError::NoNode(_))) => {
                    ensure_path(zk, session, name).await?;
                    ZkLockStep::Create { prefix }
                }
                Err(ZkCallError::Zk(error)) => return fail(LockError::Zk(error)),
            },
            ZkLockStep::List { path } => match zk.get_children(&path, budget).await {
                Ok((names, zxid)) => recipe.step(ZkLockInput::Children { names, zxid }),
                Err(error) => return fail(call_error(error)),
            },
            ZkLockStep::Exists { path } => match zk.exists(&path, budget).await {
                Ok((stat, zxid)) => recipe.step(ZkLockInput::Exists { stat, zxid }),
                Err(error) => return fail(call_error(error)),
            },
            ZkLockStep::Delete { path } => match guaranteed_delete(zk, session, &path).await {
                Ok(()) => recipe.step(ZkLockInput::Deleted),
                Err(error) => return fail(call_error(error)),
            },
            ZkLockStep::Wait { path, kind, after } => match wait(zk, session, &path, kind, after).await {
                Ok(()) => {
                    let waiter = ours.clone().unwrap_or_default();
                    recorder.record(node, Event::Wakeup { lock: name.to_string(), waiter });
                    recipe.step(ZkLockInput::Fired)
                }
                Err(end) => return fail(LockError::SessionEnded(end)),
            },
            ZkLockStep::Acquired { path, token } => return Ok((path, token)),
            ZkLockStep::Failed(error) => return fail(LockError::ZkLock(error)),
        };
    }
}

/// Waits until the watch fires or the session ends.
async fn wait(
    zk: &ZkClient,
    session: &Session,
    path: &str,
    kind: WatchKind,
    mut after: Revision,
) -> Result<(), SessionEnd> {
    loop {
        if let Some(end) = session.ended() {
            return Err(end);
        }
        match zk.poll_watch(path, kind, after, WATCH_POLL).await {
            Ok((events, _)) if !events.is_empty() => return Ok(()),
            Ok((_, resume)) => after = resume,
            // The changes after `after` are compacted away: something may have fired; look again.
            Err(PollError::Store(_)) => return Ok(()),
            Err(PollError::Call(_)) => zk.client().clock().sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Creates `path` and its ancestors as persistent nodes where missing (Curator's
/// creatingParentsIfNeeded). Retries lost replies: a create of an existing node is harmless.
async fn ensure_path(zk: &ZkClient, session: &Session, path: &str) -> Result<(), (LockError, Option<String>)> {
    let mut prefix = String::new();
    for segment in path.trim_start_matches('/').split('/') {
        prefix = format!("{prefix}/{segment}");
        loop {
            if let Some(end) = session.ended() {
                return Err((LockError::SessionEnded(end), None));
            }
            match zk.create(&prefix, "", CreateMode::Persistent).await {
                Ok(_) | Err(ZkCallError::Zk(ZkError::NodeExists(_))) => break,
                Err(ZkCallError::ConnectionLoss(_)) => zk.client().clock().sleep(Duration::from_millis(20)).await,
                Err(ZkCallError::Zk(error)) => return Err((LockError::Zk(error), None)),
            }
        }
    }
    Ok(())
}

fn call_error(error: ZkCallError) -> LockError {
    match error {
        ZkCallError::ConnectionLoss(reason) => LockError::ConnectionLoss(reason),
        ZkCallError::Zk(error) => LockError::Zk(error),
    }
}

/// The current leader of a ZooKeeper election at `path`: the lowest node and its data (the
/// candidate), read from the connected server (possibly stale).
pub async fn zk_leader(zk: &ZkClient, path: &str, budget: Duration) -> Result<Option<(String, String)>, ZkCallError> {
    let (mut names, _) = zk.get_children(path, budget).await?;
    names.retain(|name| crate::zk::sequence_of(name).is_some());
    names.sort_by_key(|name| (crate::zk::sequence_of(name), name.clone()));
    for name in names {
        let node = format!("{path}/{name}");
        match zk.get_data(&node, budget).await {
            Ok(((data, _), _)) => return Ok(Some((node, data))),
            // Gone since the listing: the next one leads.
            Err(ZkCallError::Zk(ZkError::NoNode(_))) => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}

/// Releases the lock by deleting our node. Records one `unlock` operation.
///
/// The delete is *guaranteed* (Curator's `delete().guaranteed()`): after a connection loss it is
/// sent again until it succeeds, finds the node already gone, or the session ends. A node left
/// behind by a lost delete would sit at the head of the queue, owned by a live session, and
/// block every waiter, its own client's next attempt included.
pub async fn unlock_zk(zk: &ZkClient, session: &Session, recorder: &Recorder, node: &str, name: &str, path: &str) {
    let op = recorder.invoke(node, Call::Unlock { name: name.to_string(), key: path.to_string() });
    match guaranteed_delete(zk, session, path).await {
        Ok(()) => recorder.ok(node, op, Return::Unlocked),
        Err(ZkCallError::Zk(error)) => recorder.fail(node, op, error.to_string()),
        Err(ZkCallError::ConnectionLoss(reason)) => recorder.info(node, op, reason),
    }
}

/// Deletes `path`, again after each connection loss, until done or the session ends (then the
/// session's end deletes the ephemeral node anyway). A node already gone counts as deleted: an
/// earlier attempt whose reply was lost may have deleted it.
async fn guaranteed_delete(zk: &ZkClient, session: &Session, path: &str) -> Result<(), ZkCallError> {
    loop {
        match zk.delete(path, ANY_VERSION).await {
            Ok(()) | Err(ZkCallError::Zk(ZkError::NoNode(_))) => return Ok(()),
            Err(ZkCallError::ConnectionLoss(reason)) if session.ended().is_some() => {
                return Err(ZkCallError::ConnectionLoss(reason));
            }
            Err(ZkCallError::ConnectionLoss(_)) => zk.client().clock().sleep(Duration::from_millis(20)).await,
            Err(error) => return Err(error),
        }
    }
}

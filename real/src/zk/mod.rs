//! The ZooKeeper side of a client process: a session (zookeeper-client's connection, which pings
//! and reconnects by itself) and the lock recipes: the simulator's sans-IO `ZkLock` core
//! (sim/core/src/recipe/zk_lock.rs: queue lock, herd lock, election) driven over a real ensemble.
//!
//! A watch on a real server is armed by the read that sets it, so the driver sets it there: the
//! queue lock's `exists(predecessor)` arms a data watch, the herd lock's listing a child watch,
//! and the recipe's `Wait` step then awaits the watcher armed by the step before it.

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, ConnectionState, Event, Return};
use coordsim_sim::recipe::zk_lock::{ZkLock, ZkLockConfig, ZkLockInput, ZkLockStep};
use coordsim_sim::scenario::Recipe;
use coordsim_sim::zk::{Stat, WatchKind};
use zookeeper_client as zk;

use crate::config::{ClientConfig, LockConfig};
use crate::journal::Journal;
use crate::session::SessionWatch;
use crate::workload::LockBackend;

pub mod tap;

/// Pause before a request is sent again after a connection loss.
const RETRY: Duration = Duration::from_millis(20);

pub struct ZkBackend {
    config: ZkConfig,
    client: Option<zk::Client>,
    session_id: i64,
    state_task: Option<tokio::task::JoinHandle<()>>,
    /// The session's connection states are recorded from a task of their own.
    journal: Arc<Journal>,
    /// What the client connects through, so that its sessions' renewals are journaled.
    taps: Option<tap::Taps>,
}

struct ZkConfig {
    client: ClientConfig,
    lock: LockConfig,
    recipe: ZkLockConfig,
}

impl ZkBackend {
    pub fn new(config: &ClientConfig, lock: &LockConfig, journal: Arc<Journal>) -> ZkBackend {
        let base = match lock.recipe {
            Recipe::ZkHerdLock => ZkLockConfig::HERD,
            Recipe::ZkElection => ZkLockConfig::ELECTION,
            _ => ZkLockConfig::QUEUE,
        };
        let recipe = ZkLockConfig { unique_tag: lock.unique_tag, recheck_vanished: lock.recheck_vanished, ..base };
        ZkBackend {
            config: ZkConfig { client: config.clone(), lock: lock.clone(), recipe },
            client: None,
            session_id: 0,
            state_task: None,
            journal,
            taps: None,
        }
    }

    fn client(&self) -> &zk::Client {
        self.client.as_ref().expect("a session is open")
    }

    fn budget(&self) -> Duration {
        Duration::from_millis(self.config.lock.ttl_ms)
    }
}

/// A watch armed by the last read, awaited by the next `Wait` step.
struct Armed {
    path: String,
    kind: WatchKind,
    watcher: zk::OneshotWatcher,
}

impl LockBackend for ZkBackend {
    async fn open_session(&mut self, journal: &Journal) -> Result<SessionWatch, String> {
        let node = self.config.client.name.clone();
        let ttl_ms = self.config.lock.ttl_ms;
        let op = journal.invoke(&node, Call::LeaseGrant { ttl_ms });
        if self.taps.is_none() {
            let taps = tap::Taps::start(&self.config.client.endpoints, &node, self.journal.clone()).await;
            match taps {
                Ok(taps) => self.taps = Some(taps),
                Err(error) => {
                    journal.info(&node, op, format!("cannot listen for the session tap: {error}"));
                    return Err(error.to_string());
                }
            }
        }
        let cluster = self.taps.as_ref().expect("started above").addresses.join(",");
        let connect = zk::Client::connector().with_session_timeout(Duration::from_millis(ttl_ms)).connect(&cluster);
        let client = match tokio::time::timeout(self.budget(), connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                journal.info(&node, op, error.to_string());
                return Err(error.to_string());
            }
            Err(_) => {
                journal.info(&node, op, "no server answered within the session timeout");
                return Err("timeout".into());
            }
        };
        self.session_id = client.session_id().0;
        let negotiated = client.session_timeout().as_millis() as u64;
        journal.ok(&node, op, Return::LeaseGranted { lease: self.session_id, ttl_ms: negotiated });
        let session = SessionWatch::default();
        let mut states = client.state_watcher();
        let watch = session.clone();
        let journal = self.journal.clone();
        journal.record(&node, Event::Connection { state: ConnectionState::Connected, server: None, reason: None });
        self.state_task = Some(tokio::spawn(async move {
            loop {
                let state = states.changed().await;
                // The crate's states in Curator's names, as the simulator records them.
                let named = match state {
                    zk::SessionState::Disconnected => Some(ConnectionState::Suspended),
                    zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                        Some(ConnectionState::Reconnected)
                    }
                    _ if state.is_terminated() => Some(ConnectionState::Lost),
                    _ => None,
                };
                if let Some(named) = named {
                    let reason = format!("zookeeper-client: {state:?}");
                    journal.record(&node, Event::Connection { state: named, server: None, reason: Some(reason) });
                }
                if state.is_terminated() {
                    watch.end(format!("session {state:?}").to_lowercase());
                    return;
                }
            }
        }));
        self.client = Some(client);
        Ok(session)
    }

    async fn acquire(&mut self, session: &SessionWatch, journal: &Journal) -> Result<(String, i64), String> {
        let node = self.config.client.name.clone();
        let name = self.config.lock.lock_name.clone();
        let op = journal.invoke(&node, Call::Lock { name: name.clone(), lease: self.session_id, permits: 1 });
        let result = self.run_recipe(session, journal).await;
        match result {
            Ok((path, token)) => {
                journal.ok(&node, op, Return::Locked { key: path.clone(), token });
                Ok((path, token))
            }
            Err((Failure::ConnectionLoss(reason), ours)) => {
                journal.info(&node, op, reason.clone());
                // Our node may exist: remove it so that it does not block the queue until the
                // session ends (Curator deletes its node when an acquire fails).
                if let Some(path) = ours {
                    let _ = self.guaranteed_delete(session, &path).await;
                }
                Err(reason)
            }
            Err((Failure::Refused(reason), _)) => {
                journal.fail(&node, op, reason.clone());
                Err(reason)
            }
        }
    }

    async fn release(&mut self, session: &SessionWatch, journal: &Journal, key: &str, _token: i64) {
        let node = self.config.client.name.clone();
        let op = journal.invoke(&node, Call::Unlock { name: self.config.lock.lock_name.clone(), key: key.to_string() });
        match self.guaranteed_delete(session, key).await {
            Ok(()) => journal.ok(&node, op, Return::Unlocked),
            Err(Failure::ConnectionLoss(reason)) => journal.info(&node, op, reason),
            Err(Failure::Refused(reason)) => journal.fail(&node, op, reason),
        }
    }

    fn drop_session(&mut self) {
        if let Some(task) = self.state_task.take() {
            task.abort();
        }
        // Dropping the last handle closes the session on the server, if it still lives.
        self.client = None;
    }
}

enum Failure {
    ConnectionLoss(String),
    Refused(String),
}

fn failure(error: zk::Error) -> Failure {
    match error {
        zk::Error::ConnectionLoss | zk::Error::Timeout => Failure::ConnectionLoss(error.to_string()),
        other => Failure::Refused(other.to_string()),
    }
}

fn stat(stat: &zk::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        version: stat.version as i64,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length.max(0) as usize,
        num_children: stat.num_children.max(0) as usize,
    }
}

impl ZkBackend {
    async fn run_recipe(
        &self,
        session: &SessionWatch,
        journal: &Journal,
    ) -> Result<(String, i64), (Failure, Option<String>)> {
        let node = self.config.client.name.as_str();
        let name = self.config.lock.lock_name.as_str();
        let tag = format!("{node}-{:x}", self.session_id);
        let (mut recipe, mut step) = ZkLock::lock(name, &tag, self.config.recipe);
        let mut armed: Option<Armed> = None;
        let client = self.client();
        loop {
            let ours = recipe.node().map(str::to_string);
            let fail = |failure: Failure| Err((failure, ours.clone()));
            if let Some(end) = session.ended() {
                return fail(Failure::Refused(end));
            }
            // The client's log holds every step (and below, what the reads saw): a real run
            // cannot be replayed, so its verdicts are diagnosed from these lines.
            eprintln!("{:.6}s {step:?}", journal.now_ns() as f64 / 1e9);
            step = match step {
                // The node's data names its client (the candidate's identity, for an election).
                ZkLockStep::Create { prefix } => {
                    let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
                    match self.timed(client.create(&prefix, node.as_bytes(), &options)).await {
                        Ok((created, sequence)) => recipe
                            .step(ZkLockInput::Created { path: format!("{prefix}{sequence}"), czxid: created.czxid }),
                        Err(zk::Error::ConnectionLoss | zk::Error::Timeout) => recipe.step(ZkLockInput::CreateLost),
                        // The first use of the lock: create the lock node (and its parents).
                        Err(zk::Error::NoNode) => {
                            let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                            match self.timed(client.mkdir(name, &options)).await {
                                Ok(()) | Err(zk::Error::NodeExists) => ZkLockStep::Create { prefix },
                                Err(error) => return fail(failure(error)),
                            }
                        }
                        Err(error) => return fail(failure(error)),
                    }
                }
                ZkLockStep::List { path } if self.config.recipe.herd => {
                    match self.timed(client.get_and_watch_children(&path)).await {
                        Ok((names, parent, watcher)) => {
                            armed = Some(Armed { path: path.clone(), kind: WatchKind::Children, watcher });
                            recipe.step(ZkLockInput::Children { names, zxid: parent.pzxid })
                        }
                        Err(error) => return fail(failure(error)),
                    }
                }
                ZkLockStep::List { path } => match self.timed(client.get_children(&path)).await {
                    Ok((names, parent)) => {
                        eprintln!(
                            "{:.6}s children {names:?} (pzxid {:#x})",
                            journal.now_ns() as f64 / 1e9,
                            parent.pzxid
                        );
                        recipe.step(ZkLockInput::Children { names, zxid: parent.pzxid })
                    }
                    Err(error) => return fail(failure(error)),
                },
                ZkLockStep::Exists { path } => match self.timed(client.check_and_watch_stat(&path)).await {
                    Ok((found, watcher)) => {
                        let zxid = found.as_ref().map_or(0, |s| s.mzxid);
                        eprintln!("{:.6}s exists: {}", journal.now_ns() as f64 / 1e9, found.is_some());
                        armed = Some(Armed { path: path.clone(), kind: WatchKind::Data, watcher });
                        recipe.step(ZkLockInput::Exists { stat: found.as_ref().map(stat), zxid })
                    }
                    Err(error) => return fail(failure(error)),
                },
                ZkLockStep::Delete { path } => match self.guaranteed_delete(session, &path).await {
                    Ok(()) => recipe.step(ZkLockInput::Deleted),
                    Err(error) => return fail(error),
                },
                ZkLockStep::Wait { path, kind, after } => {
                    let watcher = match armed.take() {
                        Some(watch) if watch.path == path && watch.kind == kind => watch.watcher,
                        // Not armed by the step before (the recipe never does this): arm now.
                        _ => match self.arm(&path, kind).await {
                            Ok(watcher) => watcher,
                            Err(error) => return fail(failure(error)),
                        },
                    };
                    let event = tokio::select! {
                        biased;
                        () = session.wait_end() => return fail(Failure::Refused(session.ended().unwrap_or_default())),
                        event = watcher.changed() => event,
                    };
                    // A oneshot watch also fires when the session ends (expired, closed): that is
                    // the session's end, not a wakeup by the queue.
                    if event.event_type == zk::EventType::Session {
                        return fail(Failure::Refused(format!("session {:?} while waiting", event.session_state)));
                    }
                    // The client's log says what woke it (a wakeup the herd checker cannot give a
                    // cause is diagnosed from this line and the zxid's transaction).
                    eprintln!(
                        "{:.6}s wakeup: {:?} on {} (zxid {:#x}) waiting since zxid {:#x}",
                        journal.now_ns() as f64 / 1e9,
                        event.event_type,
                        event.path,
                        event.zxid,
                        after
                    );
                    let waiter = ours.clone().unwrap_or_default();
                    journal.record(node, Event::Wakeup { lock: name.to_string(), waiter });
                    recipe.step(ZkLockInput::Fired)
                }
                ZkLockStep::Acquired { path, token } => return Ok((path, token)),
                ZkLockStep::Failed(error) => return fail(Failure::Refused(error.to_string())),
            };
        }
    }

    async fn arm(&self, path: &str, kind: WatchKind) -> Result<zk::OneshotWatcher, zk::Error> {
        let client = self.client();
        match kind {
            WatchKind::Children => self.timed(client.get_and_watch_children(path)).await.map(|(_, _, w)| w),
            _ => self.timed(client.check_and_watch_stat(path)).await.map(|(_, w)| w),
        }
    }

    /// Deletes `path`, again after each connection loss, until done or the session ends (Curator's
    /// `delete().guaranteed()`); a node already gone counts as deleted.
    async fn guaranteed_delete(&self, session: &SessionWatch, path: &str) -> Result<(), Failure> {
        loop {
            match self.timed(self.client().delete(path, None)).await {
                Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
                Err(error @ (zk::Error::ConnectionLoss | zk::Error::Timeout)) => {
                    if session.ended().is_some() {
                        return Err(Failure::ConnectionLoss(error.to_string()));
                    }
                    tokio::time::sleep(RETRY).await;
                }
                Err(error) => return Err(failure(error)),
            }
        }
    }

    /// A request bounded by the session timeout (past it the outcome is unknown).
    async fn timed<T>(&self, request: impl Future<Output = Result<T, zk::Error>>) -> Result<T, zk::Error> {
        tokio::time::timeout(self.budget(), request).await.unwrap_or(Err(zk::Error::Timeout))
    }
}

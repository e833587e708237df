//! The etcd side of a client process: a session (a lease with keepalives, as etcd clientv3's
//! concurrency.Session) and the lock recipes. The etcd mutex, the compare-and-swap lock and the
//! semaphore are the simulator's sans-IO cores (sim/core/src/recipe/), their requests translated by
//! [`convert`]; etcd-lock-api and etcd-election call etcd's own Lock (v3lock) and Election
//! (v3election) services, as the simulated ones do.

pub mod convert;

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, Event, Return};
use coordsim_sim::clock::ClockKind;
use coordsim_sim::recipe::{EntryLifetime, EtcdInput, EtcdLock, EtcdRecipe, EtcdStep};
use coordsim_sim::scenario::Recipe;
use coordsim_sim::store::{Command, Revision};
use etcd_client as etcd;

use crate::config::{ClientConfig, LockConfig};
use crate::journal::Journal;
use crate::session::SessionWatch;
use crate::workload::LockBackend;

/// Pause between attempts of a request that found no server.
const RETRY: Duration = Duration::from_millis(100);

pub struct EtcdBackend {
    config: ClientConfig,
    lock: LockConfig,
    client: etcd::Client,
    lease: i64,
    keepalive: Option<tokio::task::JoinHandle<()>>,
    journal: Arc<Journal>,
    /// etcd-election: the leader key of our last win, for Resign.
    leader: Option<etcd::LeaderKey>,
}

impl EtcdBackend {
    /// Connects lazily: the first request finds a member.
    pub async fn connect(
        config: &ClientConfig,
        lock: &LockConfig,
        journal: Arc<Journal>,
    ) -> Result<EtcdBackend, String> {
        let client = connect(&config.endpoints, Duration::from_millis(lock.ttl_ms.max(1000))).await?;
        Ok(EtcdBackend {
            config: config.clone(),
            lock: lock.clone(),
            client,
            lease: 0,
            keepalive: None,
            journal,
            leader: None,
        })
    }

    fn budget(&self) -> Duration {
        Duration::from_millis(self.lock.ttl_ms)
    }
}

/// A client of the cluster at `endpoints` whose requests give up after `timeout`. Connects
/// lazily: the first request finds a member.
pub async fn connect(endpoints: &[String], timeout: Duration) -> Result<etcd::Client, String> {
    let options = etcd::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(1))
        .with_timeout(timeout)
        .with_keep_alive(Duration::from_secs(1), Duration::from_secs(1));
    etcd::Client::connect(endpoints, Some(options))
        .await
        .map_err(|error| format!("cannot reach etcd at {endpoints:?}: {error}"))
}

/// The lease's TTL in whole seconds, as etcd grants it (rounded up; at least 1 s).
pub fn ttl_seconds(ttl_ms: u64) -> i64 {
    ttl_ms.div_ceil(1000).max(1) as i64
}

impl LockBackend for EtcdBackend {
    async fn open_session(&mut self, journal: &Journal) -> Result<SessionWatch, String> {
        let node = self.config.name.clone();
        let ttl_ms = ttl_seconds(self.lock.ttl_ms) as u64 * 1000;
        let op = journal.invoke(&node, Call::LeaseGrant { ttl_ms });
        let clock = DeadlineClock(self.lock.deadline_clock);
        let sent = clock.now_ns();
        let granted =
            tokio::time::timeout(self.budget(), self.client.lease_grant(ttl_seconds(self.lock.ttl_ms), None)).await;
        let response = match granted {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                journal.info(&node, op, error.to_string());
                return Err(error.to_string());
            }
            Err(_) => {
                journal.info(&node, op, "no answer within the TTL");
                return Err("timeout".into());
            }
        };
        self.lease = response.id();
        journal.ok(&node, op, Return::LeaseGranted { lease: response.id(), ttl_ms: response.ttl() as u64 * 1000 });
        let session = SessionWatch::default();
        let keepalive = KeepAlive {
            client: self.client.clone(),
            node,
            lease: self.lease,
            ttl_ms,
            deadline_ms: self.lock.deadline_ms,
            clock,
            ignore_failures: self.lock.ignore_keepalive_failure,
            session: session.clone(),
            journal: self.journal.clone(),
        };
        self.keepalive = Some(tokio::spawn(keepalive.run(sent)));
        Ok(session)
    }

    async fn acquire(&mut self, session: &SessionWatch, journal: &Journal) -> Result<(String, i64), String> {
        let node = self.config.name.clone();
        let name = self.lock.lock_name.clone();
        let lease = self.lease;
        // etcd's Lock and Election services run the mutex on the server.
        if matches!(self.lock.recipe, Recipe::EtcdLockApi | Recipe::EtcdElection) {
            let op = journal.invoke(&node, Call::Lock { name: name.clone(), lease, permits: 1 });
            return match self.lock.recipe {
                Recipe::EtcdLockApi => self.lock_api(session, journal, op).await,
                _ => self.campaign(session, journal, op).await,
            };
        }
        let (mut core, mut step) =
            EtcdLock::start(self.lock.recipe, &name, &node, lease, self.lock.permits, EntryLifetime::Session)
                .ok_or_else(|| format!("{:?} is not an etcd recipe", self.lock.recipe))?;
        let op = journal.invoke(&node, Call::Lock { name: name.clone(), lease, permits: core.permits() });
        let result = loop {
            if let Some(end) = session.ended() {
                break Err(Failure::SessionEnded(end));
            }
            step = match step {
                EtcdStep::Txn(txn) => match self.call(self.client.clone().txn(convert::txn(&txn))).await {
                    Ok(response) => core.step(EtcdInput::Txn(convert::txn_response(&response))),
                    Err(error) => break Err(error),
                },
                EtcdStep::Range(request) => {
                    let (key, options) = convert::get(&request);
                    match self.call(self.client.clone().get(key, Some(options))).await {
                        Ok(response) => core.step(EtcdInput::Range(convert::range_response(&response))),
                        Err(error) => break Err(error),
                    }
                }
                EtcdStep::WaitDelete { key, from_revision } => {
                    match wait_delete(&self.client, session, &key, from_revision).await {
                        Ok(()) => {
                            journal.record(&node, Event::Wakeup { lock: name.clone(), waiter: core.waiter(&node) });
                            self.backoff().await;
                            core.step(EtcdInput::Deleted)
                        }
                        Err(end) => break Err(Failure::SessionEnded(end)),
                    }
                }
                EtcdStep::Acquired { key, token } => break Ok((key, token)),
                EtcdStep::Failed(error) => break Err(Failure::Refused(error.to_string())),
            };
        };
        match result {
            Ok((key, token)) => {
                journal.ok(&node, op, Return::Locked { key: key.clone(), token });
                Ok((key, token))
            }
            Err(Failure::Unavailable(error)) => {
                journal.info(&node, op, error.clone());
                // Our key may exist: remove it so it does not block the queue until the lease
                // expires (etcd's Lock does the same when its context is cancelled).
                if let Some(key) = core.own_key() {
                    let _ = self.call(self.client.clone().delete(key.to_string(), None)).await;
                }
                Err(error)
            }
            Err(Failure::SessionEnded(reason) | Failure::Refused(reason)) => {
                journal.fail(&node, op, reason.clone());
                Err(reason)
            }
        }
    }

    async fn release(&mut self, _session: &SessionWatch, journal: &Journal, key: &str, token: i64) {
        let node = self.config.name.clone();
        let op = journal.invoke(&node, Call::Unlock { name: self.lock.lock_name.clone(), key: key.to_string() });
        let mut client = self.client.clone();
        let outcome = match self.lock.recipe {
            Recipe::EtcdLockApi => self.call(client.unlock(key.to_string())).await.map(drop),
            Recipe::EtcdElection => {
                let options = self.leader.take().map(|leader| etcd::ResignOptions::new().with_leader(leader));
                self.call(client.resign(options)).await.map(drop)
            }
            recipe => match EtcdLock::release(recipe, key, token) {
                Some(Command::Txn(txn)) => self.call(client.txn(convert::txn(&txn))).await.map(drop),
                Some(Command::DeleteRange(delete)) => {
                    let (key, options) = convert::delete(&delete);
                    self.call(client.delete(key, Some(options))).await.map(drop)
                }
                other => Err(Failure::Refused(format!("{recipe:?} has no release on etcd: {other:?}"))),
            },
        };
        match outcome {
            Ok(()) => journal.ok(&node, op, Return::Unlocked),
            Err(Failure::Unavailable(error)) => journal.info(&node, op, error),
            Err(Failure::SessionEnded(error) | Failure::Refused(error)) => journal.fail(&node, op, error),
        }
    }

    fn drop_session(&mut self) {
        if let Some(task) = self.keepalive.take() {
            task.abort();
        }
    }
}

impl EtcdBackend {
    /// etcd's Lock service: blocks on the server until the lock is ours. Its reply names the
    /// holder key but not its revision: the token is the key's create_revision, read next (the
    /// key is ours and cannot change while our lease lives).
    async fn lock_api(&mut self, session: &SessionWatch, journal: &Journal, op: u64) -> Result<(String, i64), String> {
        let node = self.config.name.clone();
        let options = etcd::LockOptions::new().with_lease(self.lease);
        let mut client = self.client.clone();
        let locked = tokio::select! {
            biased;
            () = session.wait_end() => Err(Failure::SessionEnded(session.ended().unwrap_or_default())),
            locked = client.lock(self.lock.lock_name.clone(), Some(options)) => locked.map_err(|e| Failure::Unavailable(e.to_string())),
        };
        let token = match locked {
            Ok(response) => {
                let key = String::from_utf8_lossy(response.key()).into_owned();
                match self.call(self.client.clone().get(key.clone(), None)).await {
                    Ok(got) => got.kvs().first().map(|kv| (key, kv.create_revision())),
                    Err(_) => None,
                }
            }
            Err(Failure::SessionEnded(reason)) => {
                // The server may still grant the lock to the dead session: unknown outcome.
                journal.info(&node, op, reason.clone());
                return Err(reason);
            }
            Err(Failure::Unavailable(reason) | Failure::Refused(reason)) => {
                journal.info(&node, op, reason.clone());
                return Err(reason);
            }
        };
        match token {
            Some((key, token)) => {
                journal.ok(&node, op, Return::Locked { key: key.clone(), token });
                Ok((key, token))
            }
            None => {
                journal.info(&node, op, "granted, but the holder key could not be read");
                Err("holder key unreadable".into())
            }
        }
    }

    /// etcd's Election service: Campaign blocks on the server until we lead; the leader key's
    /// revision (its create_revision) is the term, the fencing token, as in the simulator.
    async fn campaign(&mut self, session: &SessionWatch, journal: &Journal, op: u64) -> Result<(String, i64), String> {
        let node = self.config.name.clone();
        let mut client = self.client.clone();
        let name = self.lock.lock_name.clone();
        let won = tokio::select! {
            biased;
            () = session.wait_end() => Err(session.ended().unwrap_or_default()),
            won = client.campaign(name, node.clone(), self.lease) => won.map_err(|e| e.to_string()),
        };
        match won.map(|mut response| response.take_leader()) {
            Ok(Some(leader)) => {
                let key = String::from_utf8_lossy(leader.key()).into_owned();
                let token = leader.rev();
                self.leader = Some(leader);
                journal.ok(&node, op, Return::Locked { key: key.clone(), token });
                Ok((key, token))
            }
            Ok(None) => {
                journal.info(&node, op, "campaign answered without a leader key");
                Err("no leader key".into())
            }
            // The server may still elect the dead session, or may have: unknown outcome.
            Err(reason) => {
                journal.info(&node, op, reason.clone());
                Err(reason)
            }
        }
    }

    /// Runs one request with the session's budget; a failure is "unavailable".
    async fn call<T>(&self, request: impl Future<Output = Result<T, etcd::Error>>) -> Result<T, Failure> {
        match tokio::time::timeout(self.budget(), request).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(Failure::Unavailable(error.to_string())),
            Err(_) => Err(Failure::Unavailable("no answer within the TTL".into())),
        }
    }

    /// etcd-cas with `backoff`: a random pause before trying again, to spread the retries.
    async fn backoff(&self) {
        if let Some(backoff) = self.lock.backoff_ms.filter(|ms| *ms > 0) {
            let jitter = crate::journal::monotonic_ns() % backoff;
            tokio::time::sleep(Duration::from_millis(jitter)).await;
        }
    }
}

enum Failure {
    SessionEnded(String),
    Unavailable(String),
    /// The recipe gave up (its key vanished: the session expired) or broke its protocol.
    Refused(String),
}

/// The clock a client deadline is timed on (`[lock] client_deadline_clock`), read as ns: the
/// process's monotonic clock (which a `[[clock]]` rate skews) or its wall clock
/// (`CLOCK_REALTIME`, which a `clock-jump` steps: real/src/run.rs `ClockSteps`).
#[derive(Clone, Copy)]
struct DeadlineClock(ClockKind);

impl DeadlineClock {
    fn now_ns(self) -> i128 {
        match self.0 {
            ClockKind::Monotonic => {
                static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
                BASE.get_or_init(std::time::Instant::now).elapsed().as_nanos() as i128
            }
            ClockKind::Wall => match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
                Ok(since) => since.as_nanos() as i128,
                Err(before) => -(before.duration().as_nanos() as i128),
            },
        }
    }

    /// Returns once this clock reads `deadline_ns` or later. The wall clock is looked at every
    /// 20 ms at least, so a step back or forward is seen as the simulator's client sees it.
    async fn past(self, deadline_ns: i128) {
        loop {
            let left = deadline_ns - self.now_ns();
            if left <= 0 {
                return;
            }
            let mut wait = Duration::from_nanos(left.min(u64::MAX as i128) as u64);
            if self.0 == ClockKind::Wall {
                wait = wait.min(Duration::from_millis(20));
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// The keepalive loop of one lease, as the simulator's (sim/src/client/session.rs) and etcd
/// clientv3's: a keepalive every third of the TTL (or of the client deadline, when shorter); the
/// session ends when etcd says the lease is gone (TTL 0), or when no keepalive sent within the
/// deadline (by default the TTL) was acknowledged. With a client deadline the deadline is watched
/// continuously, on the clock `[lock] client_deadline_clock` names; without, clientv3 notices it
/// only when an attempt ends. The keepalives' pace is the process's monotonic clock (tokio's
/// `Instant`), which a scenario's `[[clock]]` skews.
struct KeepAlive {
    client: etcd::Client,
    node: String,
    lease: i64,
    ttl_ms: u64,
    deadline_ms: Option<u64>,
    clock: DeadlineClock,
    /// The `ignore_keepalive_failure` bug: nothing a keepalive learns ends the session.
    ignore_failures: bool,
    session: SessionWatch,
    journal: Arc<Journal>,
}

impl KeepAlive {
    async fn run(mut self, granted_sent: i128) {
        let deadline_ms = self.deadline_ms.unwrap_or(self.ttl_ms);
        let interval = Duration::from_millis((self.ttl_ms.min(deadline_ms) / 3).max(1));
        let clock = self.clock;
        let mut last_ack_sent = granted_sent;
        let mut next = tokio::time::Instant::now() + interval;
        let mut stream: Option<(etcd::LeaseKeeper, etcd::LeaseKeepAliveStream)> = None;
        let (node, lease) = (self.node.clone(), self.lease);
        let watching = self.deadline_ms.is_some() && !self.ignore_failures;
        loop {
            let deadline = last_ack_sent + i128::from(deadline_ms) * 1_000_000;
            if watching && clock.now_ns() >= deadline {
                return self.session.end("client deadline passed");
            }
            let now = tokio::time::Instant::now();
            if now < next {
                if watching {
                    tokio::select! {
                        biased;
                        () = tokio::time::sleep_until(next) => {}
                        () = clock.past(deadline) => {}
                    }
                } else {
                    tokio::time::sleep_until(next).await;
                }
                continue;
            }
            next = now + interval;
            let sent = clock.now_ns();
            let op = self.journal.invoke(&node, Call::LeaseKeepAlive { lease });
            let client = &mut self.client;
            let attempt = tokio::time::timeout(interval, async {
                if stream.is_none() {
                    stream = Some(client.lease_keep_alive(lease).await?);
                }
                let (keeper, responses) = stream.as_mut().expect("opened above");
                keeper.keep_alive().await?;
                responses.message().await
            });
            let watched = async {
                match watching {
                    true => clock.past(deadline).await,
                    false => std::future::pending().await,
                }
            };
            let answer = tokio::select! {
                biased;
                answer = attempt => answer,
                () = watched => {
                    self.journal.info(&node, op, "client deadline passed while waiting for the reply");
                    return self.session.end("client deadline passed");
                }
            };
            match answer {
                Ok(Ok(Some(response))) if response.ttl() > 0 => {
                    last_ack_sent = sent;
                    self.journal.ok(&node, op, Return::LeaseKeptAlive { ttl_ms: response.ttl() as u64 * 1000 });
                }
                Ok(Ok(Some(_))) => {
                    self.journal.fail(&node, op, format!("lease {lease} not found"));
                    if !self.ignore_failures {
                        return self.session.end("lease expired");
                    }
                }
                Ok(Ok(None)) | Ok(Err(_)) | Err(_) => {
                    stream = None;
                    self.journal.info(&node, op, "keepalive unanswered");
                }
            }
            if clock.now_ns() >= deadline && !self.ignore_failures {
                return self.session.end("no keepalive acknowledged within the deadline");
            }
        }
    }
}

/// Waits until `key` is deleted at or after revision `from`, or the session ends.
async fn wait_delete(
    client: &etcd::Client,
    session: &SessionWatch,
    key: &str,
    mut from: Revision,
) -> Result<(), String> {
    loop {
        if let Some(end) = session.ended() {
            return Err(end);
        }
        let mut client = client.clone();
        let options = etcd::WatchOptions::new().with_start_revision(from);
        // Ok(true): the key was deleted (or the history before `from` is compacted away: look at
        // the queue again instead); Ok(false) or an error: the stream broke, watch again.
        let watched = async {
            let mut stream = client.watch(key.to_string(), Some(options)).await?;
            while let Some(response) = stream.message().await? {
                if response.canceled() && response.compact_revision() > 0 {
                    return Ok::<bool, etcd::Error>(true);
                }
                for event in response.events() {
                    if event.event_type() == etcd::EventType::Delete {
                        return Ok(true);
                    }
                    if let Some(kv) = event.kv() {
                        from = from.max(kv.mod_revision() + 1);
                    }
                }
            }
            Ok(false)
        };
        tokio::select! {
            biased;
            () = session.wait_end() => return Err(session.ended().unwrap_or_default()),
            outcome = watched => match outcome {
                Ok(true) => return Ok(()),
                Ok(false) | Err(_) => tokio::time::sleep(RETRY).await,
            },
        }
    }
}

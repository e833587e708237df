//! The worker pool itself: one source for both worlds. It names `zookeeper_client` through its
//! parent module: coordsim's API under the simulator, the real zookeeper-client crate elsewhere
//! (`real/tests/worker_pool_on_real_zookeeper.rs` compiles this very file against the real crate
//! and runs it on a real ensemble).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use super::zookeeper_client::{Acls, Client, CreateMode, Error, SessionState, StateWatcher};

/// Partitions 0..PARTITIONS are shared out.
pub const PARTITIONS: usize = 6;
/// Each worker's session timeout.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// How often a worker looks at its session, the assignment and (leading) the members.
pub const TICK: Duration = Duration::from_millis(200);

const ROOT: &str = "/pool";
const MEMBERS: &str = "/pool/members";
const ELECTION: &str = "/pool/election";
const CLAIMS: &str = "/pool/claims";
const ASSIGNMENT: &str = "/pool/assignment";

/// How a worker decides it owns a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The bug: owns what its last read of the assignment says.
    OwnsWhatItReads,
    /// The fix: owns through an ephemeral claim of its connected session.
    ClaimsBeforeOwning,
}

/// What a worker does outside ZooKeeper.
pub trait Effects {
    /// The worker starts processing `partition`.
    fn owned(&self, partition: usize);
    /// The worker stops processing `partition`.
    fn released(&self, partition: usize, reason: &str);
    /// Sleeps on the local clock.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}

/// Runs one worker for ever: a session, registration, then ticks until the session ends.
pub async fn run_worker(cluster: String, name: String, variant: Variant, effects: impl Effects) {
    loop {
        let connected = Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&cluster).await;
        if let Ok(zk) = connected {
            let mut worker = Worker { zk, name: name.clone(), variant, owned: BTreeSet::new(), election: None };
            worker.serve(&effects).await;
        }
        effects.sleep(Duration::from_secs(1)).await;
    }
}

struct Worker {
    zk: Client,
    name: String,
    variant: Variant,
    owned: BTreeSet<usize>,
    /// This session's election node's name.
    election: Option<String>,
}

impl Worker {
    async fn serve(&mut self, effects: &impl Effects) {
        for path in [ROOT, MEMBERS, ELECTION, CLAIMS, ASSIGNMENT] {
            if !self.ensure(path).await {
                return;
            }
        }
        // An ephemeral node of this worker's previous session may still be there until that
        // session expires: try again until ours is.
        let member = format!("{MEMBERS}/{}", self.name);
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        loop {
            match self.zk.create(&member, b"", &ephemeral).await {
                Ok(_) => break,
                Err(Error::SessionExpired) | Err(Error::ClientClosed) => return,
                Err(_) => effects.sleep(TICK).await,
            }
        }
        let sequential = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        match self.zk.create(&format!("{ELECTION}/n-"), b"", &sequential).await {
            Ok((_, sequence)) => self.election = Some(format!("n-{sequence}")),
            Err(_) => return,
        }
        let mut states = self.zk.state_watcher();
        loop {
            let state = self.zk.state();
            if state.is_terminated() {
                self.release_all(effects, "session expired");
                return;
            }
            match self.variant {
                Variant::OwnsWhatItReads => self.tick(effects).await,
                Variant::ClaimsBeforeOwning if state != SessionState::SyncConnected => {
                    self.release_all(effects, "disconnected")
                }
                // Stop owning the moment the session is not connected, even with a request in
                // flight: zookeeper-client holds a request made while disconnected until it
                // connects again or the session ends, so a worker that looks at its state only
                // between requests can go on owning after the ensemble expired its session.
                Variant::ClaimsBeforeOwning => {
                    if first_of(self.tick(effects), until_not_connected(&mut states)).await.is_none() {
                        self.release_all(effects, "disconnected");
                    }
                }
            }
            effects.sleep(TICK).await;
        }
    }

    /// One look: the leader rebalances, every worker brings what it owns in line.
    async fn tick(&mut self, effects: &impl Effects) {
        if self.leads().await {
            self.rebalance().await;
        }
        self.reconcile(effects).await;
    }

    /// Creates a persistent node if it is missing; false once the session is over.
    async fn ensure(&self, path: &str) -> bool {
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        loop {
            match self.zk.create(path, b"", &persistent).await {
                Ok(_) | Err(Error::NodeExists) => return true,
                Err(Error::SessionExpired) | Err(Error::ClientClosed) => return false,
                Err(_) => {}
            }
        }
    }

    async fn leads(&self) -> bool {
        let Ok(candidates) = self.zk.list_children(ELECTION).await else { return false };
        candidates.iter().min() == self.election.as_ref()
    }

    /// The leader's job: partitions round-robin over the sorted members.
    async fn rebalance(&self) {
        let Ok(mut members) = self.zk.list_children(MEMBERS).await else { return };
        if members.is_empty() {
            return;
        }
        members.sort();
        let wanted =
            (0..PARTITIONS).map(|p| format!("{p}={}", members[p % members.len()])).collect::<Vec<_>>().join(";");
        if let Ok((current, _)) = self.zk.get_data(ASSIGNMENT).await
            && current != wanted.as_bytes()
        {
            let _ = self.zk.set_data(ASSIGNMENT, wanted.as_bytes(), None).await;
        }
    }

    /// Brings what this worker processes in line with the assignment it reads.
    async fn reconcile(&mut self, effects: &impl Effects) {
        let Ok((data, _)) = self.zk.get_data(ASSIGNMENT).await else { return };
        let assignment = parse(&String::from_utf8_lossy(&data));
        let mine: BTreeSet<usize> =
            assignment.iter().filter(|(_, owner)| **owner == self.name).map(|(p, _)| *p).collect();
        for partition in self.owned.clone().difference(&mine) {
            self.owned.remove(partition);
            effects.released(*partition, "reassigned");
        }
        match self.variant {
            Variant::OwnsWhatItReads => {
                for partition in mine.difference(&self.owned.clone()) {
                    self.owned.insert(*partition);
                    effects.owned(*partition);
                }
            }
            Variant::ClaimsBeforeOwning => self.claim(&mine, effects).await,
        }
    }

    /// Takes the claims of `mine` that are free, drops the claims of partitions no longer ours.
    async fn claim(&mut self, mine: &BTreeSet<usize>, effects: &impl Effects) {
        let session = self.zk.session_id().0;
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        for partition in 0..PARTITIONS {
            let path = format!("{CLAIMS}/{partition}");
            let ours = mine.contains(&partition);
            if ours && self.owned.contains(&partition) {
                continue;
            }
            let holder = match self.zk.check_stat(&path).await {
                Ok(stat) => stat.map(|s| s.ephemeral_owner),
                Err(_) => continue,
            };
            match (ours, holder) {
                (true, None) => {
                    if self.zk.create(&path, self.name.as_bytes(), &ephemeral).await.is_ok() {
                        self.owned.insert(partition);
                        effects.owned(partition);
                    }
                }
                (true, Some(owner)) if owner == session => {
                    self.owned.insert(partition);
                    effects.owned(partition);
                }
                // Released above before the claim goes: the next owner can only start after.
                (false, Some(owner)) if owner == session => {
                    let _ = self.zk.delete(&path, None).await;
                }
                _ => {}
            }
        }
    }

    fn release_all(&mut self, effects: &impl Effects, reason: &str) {
        for partition in std::mem::take(&mut self.owned) {
            effects.released(partition, reason);
        }
    }
}

/// `0=w1;1=w2;...` → partition → member.
fn parse(text: &str) -> BTreeMap<usize, String> {
    text.split(';')
        .filter_map(|entry| entry.split_once('='))
        .filter_map(|(p, owner)| Some((p.parse().ok()?, owner.to_string())))
        .collect()
}

/// Returns once the session is not connected.
async fn until_not_connected(states: &mut StateWatcher) {
    while states.state() == SessionState::SyncConnected {
        states.changed().await;
    }
}

/// `Some(output)` if `future` finishes first, `None` if `other` does.
async fn first_of<F: Future, G: Future<Output = ()>>(future: F, other: G) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut other = std::pin::pin!(other);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        other.as_mut().poll(cx).map(|()| None)
    })
    .await
}

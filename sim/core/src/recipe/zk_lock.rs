//! The ZooKeeper lock recipes (ZooKeeper's "Recipes and Solutions", Locks; Apache Curator's
//! InterProcessMutex), as a sans-IO state machine.
//!
//! 1. Create an ephemeral sequential node `<lock>/lock-<tag>-` under the lock node. The tag
//!    (client and session) lets the client find its node again when the reply to the create is
//!    lost: the create may have been applied (docs/cases/07).
//! 2. List the children and sort them by sequence number. If ours is first, the lock is ours;
//!    the node's czxid is the **fencing token**.
//! 3. Queue lock: `exists(predecessor)` with a watch — only the node just before ours, so one
//!    release wakes one waiter. If the predecessor is already gone, list again at once: the
//!    watch is armed on a node that will never change again (docs/cases/08). Otherwise wait
//!    for the watch, then list again.
//!    Herd lock: every waiter sets a child watch on the lock node and wakes on every change to
//!    the children (docs/cases/10: the herd effect).
//!
//! With the tag, every listing also looks for *other* nodes carrying our tag: a create whose
//! reply was lost and that the recovery listing did not see yet (it was served by a server
//! behind the leader) left one behind. Such an orphan of ours is deleted before anything else:
//! it would block the queue, our own place included, for as long as our session lives.
//!
//! Unlocking deletes our node; the session's expiry deletes it too.
//!
//! Two bug switches live here, each a plain branch: `no_unique_tag_in_sequential_create`
//! (create `lock-` without a tag; after a lost reply create again, orphaning the first node in
//! front of the queue) and `lost_wakeup_on_vanished_predecessor` (sleep on the watch of a
//! predecessor that is already gone).

use super::EntryLifetime;
use crate::store::Revision;
use crate::zk::{Stat, WatchKind, name_of, sequence_of};

/// Which variant of the recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZkLockConfig {
    /// Every waiter watches the children (the herd lock) instead of its predecessor.
    pub herd: bool,
    /// Put a unique tag in the node name and look for it after a lost create reply (off: the
    /// `no_unique_tag_in_sequential_create` bug).
    pub unique_tag: bool,
    /// When the predecessor is already gone at `exists`, list again at once (off: the
    /// `lost_wakeup_on_vanished_predecessor` bug).
    pub recheck_vanished: bool,
    /// Name the nodes `n_` as ZooKeeper's leader election recipe does (the lowest node leads;
    /// the algorithm is the queue lock's) instead of `lock-`.
    pub election: bool,
    /// Ephemeral sequential nodes (the recipe) or persistent ones (`[lock] ephemeral = false`: a
    /// crashed holder's node stays, and the lock with it).
    pub lifetime: EntryLifetime,
}

impl ZkLockConfig {
    pub const QUEUE: ZkLockConfig = ZkLockConfig {
        herd: false,
        unique_tag: true,
        recheck_vanished: true,
        election: false,
        lifetime: EntryLifetime::Session,
    };
    pub const HERD: ZkLockConfig = ZkLockConfig { herd: true, ..Self::QUEUE };
    /// ZooKeeper's leader election recipe ("Recipes and Solutions", Leader Election; Curator's
    /// LeaderLatch): the queue lock, each candidate watching its predecessor.
    pub const ELECTION: ZkLockConfig = ZkLockConfig { election: true, ..Self::QUEUE };
}

/// What the driver must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZkLockStep {
    /// Create a sequential node named `prefix` + sequence number, ephemeral or persistent as
    /// [`ZkLockConfig::lifetime`] says (see [`EntryLifetime::sequential_mode`]); feed back
    /// [`ZkLockInput::Created`] or, if the reply was lost, [`ZkLockInput::CreateLost`].
    Create {
        prefix: String,
    },
    /// `getChildren(path)`; feed back [`ZkLockInput::Children`].
    List {
        path: String,
    },
    /// `exists(path)`; feed back [`ZkLockInput::Exists`].
    Exists {
        path: String,
    },
    /// Delete `path`, an orphan of ours (until it is gone); feed back [`ZkLockInput::Deleted`].
    Delete {
        path: String,
    },
    /// Wait until the watch on `path` of `kind`, set at zxid `after`, fires; feed back
    /// [`ZkLockInput::Fired`] (a wakeup).
    Wait {
        path: String,
        kind: WatchKind,
        after: Revision,
    },
    /// The lock is held through the node `path`; `token` is its czxid.
    Acquired {
        path: String,
        token: Revision,
    },
    Failed(ZkLockError),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZkLockInput {
    Created { path: String, czxid: Revision },
    CreateLost,
    Children { names: Vec<String>, zxid: Revision },
    Exists { stat: Option<Stat>, zxid: Revision },
    Fired,
    Deleted,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZkLockError {
    /// Our node is no longer among the children: the session expired (or someone deleted it).
    #[error("our lock node {0} is gone (session expired?)")]
    NodeGone(String),
    #[error("unexpected input in state {0}")]
    Protocol(&'static str),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Creating,
    /// After a lost create reply: looking for our tag among the children.
    Recovering,
    /// Reading the stat of the node we found by its tag.
    Adopting,
    Listing,
    CheckingPredecessor,
    DeletingOrphan,
    Waiting,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkLock {
    lock: String,
    /// The name our node gets before its sequence number.
    name_prefix: String,
    config: ZkLockConfig,
    /// Our node once known: (path, czxid).
    node: Option<(String, Revision)>,
    /// The path of the `exists` in flight.
    pending_exists: Option<String>,
    state: State,
}

impl ZkLock {
    /// Starts acquiring the lock node `lock` (which must exist) for the client `tag` names
    /// (unique among the clients of the lock, e.g. client name and session ID).
    pub fn lock(lock: &str, tag: &str, config: ZkLockConfig) -> (ZkLock, ZkLockStep) {
        let base = if config.election { "n_" } else { "lock-" };
        let name_prefix = match config.unique_tag {
            true => format!("{base}{tag}-"),
            false => base.to_string(),
        };
        let mut recipe = ZkLock {
            lock: lock.to_string(),
            name_prefix,
            config,
            node: None,
            pending_exists: None,
            state: State::Creating,
        };
        let step = recipe.create();
        (recipe, step)
    }

    /// Our node's path, once created (or found again).
    pub fn node(&self) -> Option<&str> {
        self.node.as_ref().map(|(path, _)| path.as_str())
    }

    pub fn step(&mut self, input: ZkLockInput) -> ZkLockStep {
        match (&self.state, input) {
            (State::Creating, ZkLockInput::Created { path, czxid }) => {
                self.node = Some((path, czxid));
                self.list()
            }
            (State::Creating, ZkLockInput::CreateLost) if self.config.unique_tag => {
                self.state = State::Recovering;
                ZkLockStep::List { path: self.lock.clone() }
            }
            // The bug: without a tag the client cannot tell its node from others, so it
            // creates another; if the lost create was applied, that node is an orphan.
            (State::Creating, ZkLockInput::CreateLost) => self.create(),
            (State::Recovering, ZkLockInput::Children { names, .. }) => {
                match names.iter().find(|name| name.starts_with(&self.name_prefix)) {
                    Some(name) => {
                        let path = format!("{}/{name}", self.lock);
                        self.state = State::Adopting;
                        self.pending_exists = Some(path.clone());
                        ZkLockStep::Exists { path }
                    }
                    None => self.create(),
                }
            }
            (State::Adopting, ZkLockInput::Exists { stat: Some(stat), .. }) => {
                let path = self.pending_exists.take().expect("adopting asked exists about a path");
                self.node = Some((path, stat.czxid));
                self.list()
            }
            // Gone between the listing and the exists: our session is ending; try afresh.
            (State::Adopting, ZkLockInput::Exists { stat: None, .. }) => self.create(),
            (State::Listing, ZkLockInput::Children { names, zxid }) => self.on_children(names, zxid),
            (State::CheckingPredecessor, ZkLockInput::Exists { stat, zxid }) => {
                let path = self.pending_exists.take().expect("checking asked exists about the predecessor");
                match stat {
                    Some(_) => self.wait(path, WatchKind::Data, zxid),
                    None if self.config.recheck_vanished => self.list(),
                    // The bug: treat "no node" as "watch set" and sleep. The watch would fire
                    // only if the predecessor were created again, which never happens.
                    None => self.wait(path, WatchKind::Data, zxid),
                }
            }
            (State::Waiting, ZkLockInput::Fired) => self.list(),
            (State::DeletingOrphan, ZkLockInput::Deleted) => self.list(),
            (State::Creating, _) => self.fail("creating"),
            (State::Recovering, _) => self.fail("recovering"),
            (State::Adopting, _) => self.fail("adopting"),
            (State::Listing, _) => self.fail("listing"),
            (State::CheckingPredecessor, _) => self.fail("checking the predecessor"),
            (State::Waiting, _) => self.fail("waiting"),
            (State::DeletingOrphan, _) => self.fail("deleting an orphan"),
            (State::Done, _) => self.fail("done"),
        }
    }

    fn create(&mut self) -> ZkLockStep {
        self.state = State::Creating;
        ZkLockStep::Create { prefix: format!("{}/{}", self.lock, self.name_prefix) }
    }

    fn list(&mut self) -> ZkLockStep {
        self.state = State::Listing;
        ZkLockStep::List { path: self.lock.clone() }
    }

    fn wait(&mut self, path: String, kind: WatchKind, after: Revision) -> ZkLockStep {
        self.state = State::Waiting;
        ZkLockStep::Wait { path, kind, after }
    }

    fn on_children(&mut self, names: Vec<String>, zxid: Revision) -> ZkLockStep {
        let (path, czxid) = self.node.clone().expect("listing happens once our node is known");
        let ours = name_of(&path);
        let mut queue: Vec<&String> = names.iter().filter(|name| sequence_of(name).is_some()).collect();
        queue.sort_by_key(|name| (sequence_of(name), *name));
        let Some(position) = queue.iter().position(|name| name.as_str() == ours) else {
            self.state = State::Done;
            return ZkLockStep::Failed(ZkLockError::NodeGone(path));
        };
        if self.config.unique_tag
            && let Some(orphan) = queue.iter().find(|name| name.starts_with(&self.name_prefix) && name.as_str() != ours)
        {
            self.state = State::DeletingOrphan;
            return ZkLockStep::Delete { path: format!("{}/{orphan}", self.lock) };
        }
        if position == 0 {
            self.state = State::Done;
            return ZkLockStep::Acquired { path, token: czxid };
        }
        if self.config.herd {
            return self.wait(self.lock.clone(), WatchKind::Children, zxid);
        }
        let predecessor = format!("{}/{}", self.lock, queue[position - 1]);
        self.state = State::CheckingPredecessor;
        self.pending_exists = Some(predecessor.clone());
        ZkLockStep::Exists { path: predecessor }
    }

    fn fail(&mut self, state: &'static str) -> ZkLockStep {
        self.state = State::Done;
        ZkLockStep::Failed(ZkLockError::Protocol(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Command, CommandResponse, LeaseId, Store};
    use crate::zk::{CreateMode, ZkOp, ZkOpResult, ZkWrite, tree, watch};

    /// A store with the lock node `/l` and one session per client.
    fn setup(clients: usize) -> (Store, Vec<LeaseId>) {
        let mut store = Store::new();
        let sessions = (0..clients)
            .map(|_| match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 5000 }) {
                CommandResponse::LeaseGrant { id, .. } => id,
                other => panic!("{other:?}"),
            })
            .collect();
        write(&mut store, 0, ZkOp::Create { path: "/l".into(), data: String::new(), mode: CreateMode::Persistent });
        (store, sessions)
    }

    fn write(store: &mut Store, session: LeaseId, op: ZkOp) -> Vec<ZkOpResult> {
        match store.apply(&Command::Zk(ZkWrite { session, ops: vec![op] })) {
            CommandResponse::Zk { result, .. } => result.expect("the write succeeds"),
            other => panic!("{other:?}"),
        }
    }

    fn delete(store: &mut Store, path: &str) {
        write(store, 0, ZkOp::Delete { path: path.into(), version: -1 });
    }

    /// Runs the recipe's steps against the store until it must wait, holds or fails.
    fn drive(store: &mut Store, session: LeaseId, recipe: &mut ZkLock, mut step: ZkLockStep) -> ZkLockStep {
        loop {
            step = match step {
                ZkLockStep::Create { prefix } => {
                    let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
                    match write(store, session, op).pop() {
                        Some(ZkOpResult::Created { path, stat }) => {
                            recipe.step(ZkLockInput::Created { path, czxid: stat.czxid })
                        }
                        other => panic!("{other:?}"),
                    }
                }
                ZkLockStep::List { path } => {
                    let names = tree::get_children(store, &path).unwrap();
                    recipe.step(ZkLockInput::Children { names, zxid: store.revision() })
                }
                ZkLockStep::Exists { path } => {
                    let stat = tree::exists(store, &path).unwrap();
                    recipe.step(ZkLockInput::Exists { stat, zxid: store.revision() })
                }
                done => return done,
            }
        }
    }

    /// Whether a watch armed at `after` has fired by now.
    fn fired(store: &Store, path: &str, kind: WatchKind, after: Revision) -> bool {
        let events = store.events(&watch::range_of(path, kind), after + 1, false).unwrap();
        !watch::fire_all(path, kind, &events).is_empty()
    }

    #[test]
    fn the_queue_grants_in_order_and_each_waiter_watches_its_predecessor() {
        let (mut store, s) = setup(3);
        let mut locks = Vec::new();
        let mut steps = Vec::new();
        for (i, session) in s.iter().enumerate() {
            let (mut lock, step) = ZkLock::lock("/l", &format!("c{i}"), ZkLockConfig::QUEUE);
            steps.push(drive(&mut store, *session, &mut lock, step));
            locks.push(lock);
        }
        let ZkLockStep::Acquired { path: first, token: t1 } = steps[0].clone() else { panic!("{:?}", steps[0]) };
        let ZkLockStep::Wait { path: watched, kind, after } = steps[1].clone() else { panic!("{:?}", steps[1]) };
        assert_eq!((watched.as_str(), kind), (first.as_str(), WatchKind::Data), "c1 watches the holder's node");
        let ZkLockStep::Wait { path: second_watches, .. } = &steps[2] else { panic!() };
        assert_eq!(second_watches, locks[1].node().unwrap(), "c2 watches c1's node, not the holder's");
        delete(&mut store, &first);
        assert!(fired(&store, &watched, kind, after), "the release fires c1's watch");
        assert!(!fired(&store, second_watches, WatchKind::Data, after), "and not c2's");
        let step = locks[1].step(ZkLockInput::Fired);
        let ZkLockStep::Acquired { token: t2, .. } = drive(&mut store, s[1], &mut locks[1], step) else { panic!() };
        assert!(t2 > t1, "tokens grow in queue order");
    }

    #[test]
    fn a_predecessor_gone_before_exists_is_rechecked_at_once_unless_the_bug_is_on() {
        for (config, wakes) in
            [(ZkLockConfig::QUEUE, true), (ZkLockConfig { recheck_vanished: false, ..ZkLockConfig::QUEUE }, false)]
        {
            let (mut store, s) = setup(2);
            let (mut holder, step) = ZkLock::lock("/l", "c0", config);
            let ZkLockStep::Acquired { path: held, .. } = drive(&mut store, s[0], &mut holder, step) else { panic!() };
            let (mut waiter, step) = ZkLock::lock("/l", "c1", config);
            // Create and list by hand, then release the holder before the exists (case 08).
            let ZkLockStep::Create { prefix } = step else { panic!() };
            let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
            let Some(ZkOpResult::Created { path, stat }) = write(&mut store, s[1], op).pop() else { panic!() };
            let ZkLockStep::List { .. } = waiter.step(ZkLockInput::Created { path, czxid: stat.czxid }) else {
                panic!()
            };
            let names = tree::get_children(&store, "/l").unwrap();
            let step = waiter.step(ZkLockInput::Children { names, zxid: store.revision() });
            assert_eq!(step, ZkLockStep::Exists { path: held.clone() });
            delete(&mut store, &held);
            let step = waiter.step(ZkLockInput::Exists { stat: None, zxid: store.revision() });
            let step = drive(&mut store, s[1], &mut waiter, step);
            match (wakes, step) {
                (true, ZkLockStep::Acquired { .. }) => {}
                (false, ZkLockStep::Wait { path, kind, after }) => {
                    assert_eq!(path, held);
                    assert!(
                        !fired(&store, &path, kind, after),
                        "a watch on a deleted node never fires: the lost wakeup"
                    );
                }
                (_, other) => panic!("recheck_vanished={}: {other:?}", config.recheck_vanished),
            }
        }
    }

    #[test]
    fn a_lost_create_reply_is_adopted_by_its_tag_or_orphaned_without_one() {
        for unique_tag in [true, false] {
            let config = ZkLockConfig { unique_tag, ..ZkLockConfig::QUEUE };
            let (mut store, s) = setup(1);
            let (mut lock, step) = ZkLock::lock("/l", "c0", config);
            // The create is applied, but its reply is lost (case 07).
            let ZkLockStep::Create { prefix } = step else { panic!() };
            let op = ZkOp::Create { path: prefix, data: String::new(), mode: CreateMode::EphemeralSequential };
            let Some(ZkOpResult::Created { path: lost, stat }) = write(&mut store, s[0], op).pop() else { panic!() };
            let step = lock.step(ZkLockInput::CreateLost);
            let step = drive(&mut store, s[0], &mut lock, step);
            match (unique_tag, step) {
                (true, ZkLockStep::Acquired { path, token }) => {
                    assert_eq!((path, token), (lost, stat.czxid), "the node found by its tag is adopted");
                    assert_eq!(tree::get_children(&store, "/l").unwrap().len(), 1);
                }
                (false, ZkLockStep::Wait { path, .. }) => {
                    assert_eq!(path, lost, "the client waits behind its own orphan: a deadlock");
                    assert_eq!(tree::get_children(&store, "/l").unwrap().len(), 2);
                }
                (_, other) => panic!("unique_tag={unique_tag}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_orphan_of_ours_is_deleted_before_anything_else() {
        let (mut store, s) = setup(1);
        let (mut lock, step) = ZkLock::lock("/l", "c0", ZkLockConfig::QUEUE);
        let ZkLockStep::Create { prefix } = step else { panic!() };
        // The first create was applied but the recovery listing missed it (a stale server):
        // the client created a second node.
        let op = ZkOp::Create { path: prefix.clone(), data: String::new(), mode: CreateMode::EphemeralSequential };
        let Some(ZkOpResult::Created { path: orphan, .. }) = write(&mut store, s[0], op.clone()).pop() else {
            panic!()
        };
        let Some(ZkOpResult::Created { path, stat }) = write(&mut store, s[0], op).pop() else { panic!() };
        let step = lock.step(ZkLockInput::Created { path, czxid: stat.czxid });
        let step = drive(&mut store, s[0], &mut lock, step);
        assert_eq!(step, ZkLockStep::Delete { path: orphan.clone() });
        delete(&mut store, &orphan);
        let step = lock.step(ZkLockInput::Deleted);
        assert!(matches!(drive(&mut store, s[0], &mut lock, step), ZkLockStep::Acquired { .. }));
    }

    #[test]
    fn herd_waiters_all_watch_the_children() {
        let (mut store, s) = setup(3);
        let (mut holder, step) = ZkLock::lock("/l", "c0", ZkLockConfig::HERD);
        assert!(matches!(drive(&mut store, s[0], &mut holder, step), ZkLockStep::Acquired { .. }));
        for (i, session) in s.iter().enumerate().skip(1) {
            let (mut waiter, step) = ZkLock::lock("/l", &format!("c{i}"), ZkLockConfig::HERD);
            let ZkLockStep::Wait { path, kind, .. } = drive(&mut store, *session, &mut waiter, step) else { panic!() };
            assert_eq!((path.as_str(), kind), ("/l", WatchKind::Children));
        }
    }
}

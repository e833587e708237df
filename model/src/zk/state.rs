//! The state of the ZooKeeper lock world: the server's store with its ZooKeeper view (the
//! shipped `Store`: znodes are keys, sessions are leases), each client's recipe (the shipped
//! `ZkLock`) and where it stands, and a monitor that remembers what the `always` properties
//! must never see.

use coordsim_core::recipe::zk_lock::{ZkLock, ZkLockStep};
use coordsim_core::store::{Command, CommandResponse, LeaseId, Revision, Store};
use coordsim_core::zk::{CreateMode, ZkOp, ZkWrite, tree};

use super::LOCK;
use crate::fingerprint::Hashed;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub store: Hashed<Store>,
    /// In client order (c1 first): roles never move (no symmetry reduction, see mod.rs).
    pub clients: Vec<Client>,
    /// Faults injected so far (abandons, lost create replies).
    pub faults: u8,
    pub monitor: Monitor,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// The session (a lease), opened before the run.
    pub session: LeaseId,
    pub phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    /// The recipe asked for `next` (a create, `getChildren` or `exists`), not yet sent.
    Requesting {
        recipe: Hashed<ZkLock>,
        next: Hashed<ZkLockStep>,
    },
    /// The recipe waits for the watch `wait` (a `ZkLockStep::Wait`) to fire; `notified` once the
    /// store has a change that fires it (`zk::watch::fired`).
    Waiting {
        recipe: Hashed<ZkLock>,
        wait: Hashed<ZkLockStep>,
        notified: bool,
    },
    /// Believes it holds the lock through the node `path`; `token` is its czxid.
    Holding {
        path: String,
        token: Revision,
    },
    Done(End),
}

/// Why a client stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// Released the lock (deleted its node).
    Released,
    /// Gave up while queued: its session closed and took its node (and its watch) with it.
    Abandoned,
    /// The recipe failed (its node vanished) or the server refused a request.
    Failed,
}

/// What the `always` properties must never see, and the rare states the `sometimes` ones ask
/// for; each set once, when it happens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Monitor {
    /// One delete fired the watches of more than one queued waiter (a herd).
    pub herd: bool,
    /// A delete fired the watch of a queued waiter (a contended release).
    pub release_woke: bool,
    /// An `exists` on the predecessor answered "no node" (case 08's window).
    pub predecessor_vanished: bool,
    /// The reply to a create was lost (case 07's fault).
    pub create_reply_lost: bool,
    /// A session owned two lock nodes: one its recipe no longer knows (case 07's orphan).
    pub orphan_node: bool,
}

impl State {
    /// The lock node `/lock` (persistent) and one session per client.
    pub fn init(clients: usize) -> State {
        let mut store = Store::new();
        let create = ZkOp::Create { path: LOCK.to_string(), data: String::new(), mode: CreateMode::Persistent };
        match store.apply(&Command::Zk(ZkWrite { session: 0, ops: vec![create] })) {
            CommandResponse::Zk { result: Ok(_), .. } => {}
            other => panic!("the store refused the lock node: {other:?}"),
        }
        let clients = (0..clients)
            .map(|_| match store.apply(&Command::LeaseGrant { id: 0, ttl_ms: 1_000 }) {
                CommandResponse::LeaseGrant { id, .. } => Client { session: id, phase: Phase::Idle },
                other => panic!("the store refused a session: {other:?}"),
            })
            .collect();
        State { store: Hashed::new(store), clients, faults: 0, monitor: Monitor::default() }
    }

    pub fn holders(&self) -> usize {
        self.clients.iter().filter(|c| matches!(c.phase, Phase::Holding { .. })).count()
    }

    pub fn all_done(&self) -> bool {
        self.clients.iter().all(|c| matches!(c.phase, Phase::Done(_)))
    }

    /// Whether the znode `path` exists.
    pub fn node_exists(&self, path: &str) -> bool {
        tree::exists(&self.store, path).is_ok_and(|stat| stat.is_some())
    }

    /// The lock's children owned by `session` (a recipe knows at most one of them).
    pub fn nodes_of(&self, session: LeaseId) -> usize {
        let names = tree::get_children(&self.store, LOCK).expect("the lock node exists");
        let owner = |name: &String| tree::exists(&self.store, &format!("{LOCK}/{name}")).ok().flatten();
        names.iter().filter_map(owner).filter(|stat| stat.ephemeral_owner == session).count()
    }
}

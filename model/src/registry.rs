//! The models, by name: what each abstracts, what it leaves out, which shipped code it runs, its
//! default size, and the result each property is expected to give. `run` checks one and returns
//! a [`ModelReport`]; `serve` opens stateright's Explorer on it.

use std::net::SocketAddr;

use coordsim_core::recipe::zk_lock::ZkLockConfig;
use coordsim_core::resource::ResourceMode;

use crate::checked::{CheckedModel, Expectation};
use crate::election::{Election, ElectionConfig};
use crate::etcd::EtcdLock;
use crate::etcd::config::{Clocks, EtcdConfig, Fault as EtcdFault, SessionCheck};
use crate::expectations::{
    election_expectations, grant_expectations, lease_lock_expectations, lost_wakeup_expectations, orphan_expectations,
    skew_expectations, zk_lock_expectations,
};
use crate::report::{ModelReport, PropertyResult};
use crate::runner::{self, Search};
use crate::shortest;
use crate::zk::{Fault, ZkConfig, ZkLockModel};

pub const CLIENTS_MIN: usize = 2;
pub const CLIENTS_MAX: usize = 6;
pub const TICKS_MAX: u8 = 30;

/// One model of the registry.
#[derive(Clone, Copy, Debug)]
pub struct ModelInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// The real protocol and the case it abstracts.
    pub abstracts: &'static str,
    /// The shipped sans-IO code it runs, or why it runs none.
    pub shared: &'static str,
    pub leaves_out: &'static str,
    pub clients_default: usize,
    pub ticks_default: u8,
    /// What the tick bound counts ("" for a model without time).
    pub ticks_unit: &'static str,
    /// Whether `--symmetry` applies (clients are interchangeable in the state).
    pub symmetric: bool,
}

const ETCD_SHARED: &str = "coordsim_core::recipe::mutex::EtcdMutex, store::Store, lessor::Lessor, resource::Resource";
const ETCD_LEAVES_OUT: &str = "replication and leader changes (one store stands for the Raft group), message loss and \
     delay (a request and its answer are one step), crashes and new sessions, compaction";
const ZK_SHARED: &str = "coordsim_core::recipe::zk_lock::ZkLock (its herd, recheck_vanished and unique_tag switches), \
     store::Store with the ZooKeeper view (zk::tree, zk::watch::fired)";
const ZK_LEAVES_OUT: &str = "replication (one store stands for the ensemble: no stale reads, no sync), time and session \
     expiry by timeout (a closed session stands for one), message loss but one lost create reply, the resource";

pub const MODELS: &[ModelInfo] = &[
    ModelInfo {
        name: "lease-lock",
        summary: "etcd mutex, unfenced resource, a client may pause for any number of ticks: a stale holder writes",
        abstracts: "the etcd mutex recipe with session leases; case 01 (GC pause outlives the lease)",
        shared: ETCD_SHARED,
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 3,
        ticks_unit: "ticks",
        symmetric: false,
    },
    ModelInfo {
        name: "lease-lock-fenced",
        summary: "the same with a resource fenced by the token: the stale write is rejected",
        abstracts: "the etcd mutex recipe with fencing tokens (the key's create_revision); case 01, fixed",
        shared: ETCD_SHARED,
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 3,
        ticks_unit: "ticks",
        symmetric: false,
    },
    ModelInfo {
        name: "queue-lock",
        summary: "ZooKeeper lock, each waiter watches its predecessor: one wakeup per release",
        abstracts: "the ZooKeeper lock recipe (sequential ephemeral nodes, exists-watch on the predecessor); case 10, fixed",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 3,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "herd-lock",
        summary: "ZooKeeper lock, every waiter watches the lock's children: one release wakes them all",
        abstracts: "the herd-prone lock (every waiter sets a children watch on the lock node); case 10",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 3,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "lost-wakeup",
        summary: "ZooKeeper lock whose client sleeps when exists() says the predecessor is gone: a waiter sleeps forever",
        abstracts: "the ZooKeeper lock recipe with recheck_vanished off, the lost-wakeup bug (Helix, CURATOR-527); \
                    case 08",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "lost-wakeup-fixed",
        summary: "the same client re-checking the queue at once when the predecessor is gone: every waiter acquires",
        abstracts: "the ZooKeeper lock recipe as shipped (recheck_vanished on); case 08, fixed",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "orphaned-sequential-node",
        summary: "ZooKeeper lock without a unique tag in its node name: a lost create reply is created again, the first \
                  node is orphaned in front of the queue and the lock deadlocks",
        abstracts: "the ZooKeeper lock recipe with unique_tag off: the node is named `lock-` without the client's \
                    tag (ZOOKEEPER-1262, CURATOR-79); case 07",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "orphaned-sequential-node-fixed",
        summary: "the same with a unique tag: after a lost create reply the client finds its node by the tag and adopts it",
        abstracts: "the ZooKeeper lock recipe as shipped: tagged sequential creates, a lost reply recovered by the \
                    tag (Curator's protected mode); case 07, fixed",
        shared: ZK_SHARED,
        leaves_out: ZK_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 0,
        ticks_unit: "",
        symmetric: false,
    },
    ModelInfo {
        name: "grant-to-expired-waiter",
        summary: "etcd mutex without the waiter's session re-check: a waiter whose lease expired is told it holds the lock",
        abstracts: "etcd 3.4.3's server-side Lock (etcd issues 11456, 9921); case 02",
        shared: "coordsim_core::recipe::mutex::EtcdMutex (its step 4 skipped by the model's driver: no bug switch in \
                 the core yet), store::Store, lessor::Lessor, resource::Resource",
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 3,
        ticks_default: 3,
        ticks_unit: "ticks",
        symmetric: false,
    },
    ModelInfo {
        name: "grant-to-expired-waiter-fixed",
        summary: "etcd mutex as shipped: the waiter re-reads its own key and gets SessionExpired",
        abstracts: "the etcd mutex recipe with the session check (etcd 3.4+ ErrSessionExpired); case 02, fixed",
        shared: ETCD_SHARED,
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 3,
        ticks_default: 3,
        ticks_unit: "ticks",
        symmetric: false,
    },
    ModelInfo {
        name: "election",
        summary: "leaders by majority vote per term, writing with the term as the token to a fenced resource",
        abstracts: "term-based leader election (Raft's vote rule) with fencing by epoch",
        shared: "resource::Resource only: the election runs inside openraft's async code and its recipe core is being \
                 written in sim/core/src/recipe/",
        leaves_out: "logs and the up-to-date vote check, heartbeats, message loss (a node not yet asked is partitioned), \
                     restarts, time",
        clients_default: 3,
        ticks_default: 3,
        ticks_unit: "terms",
        symmetric: true,
    },
    ModelInfo {
        name: "election-unfenced",
        summary: "the same with an unfenced resource: a deposed leader's write lands after its successor's",
        abstracts: "term-based leader election without fencing",
        shared: "resource::Resource only (see election)",
        leaves_out: "logs and the up-to-date vote check, heartbeats, message loss, restarts, time",
        clients_default: 3,
        ticks_default: 3,
        ticks_unit: "terms",
        symmetric: true,
    },
    ModelInfo {
        name: "clock-skew",
        summary: "a holder cut off from the servers acts until its own deadline, which equals the TTL on a clock that \
                  may run at half speed: two holders",
        abstracts: "client deadline vs server lease expiry under bounded clock rates (Kubernetes leader election, \
                    etcd sessions); case 09",
        shared: ETCD_SHARED,
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 4,
        ticks_unit: "ticks",
        symmetric: false,
    },
    ModelInfo {
        name: "clock-skew-margin",
        summary: "the same with a deadline of TTL × the slowest rate: the holder always stops first",
        abstracts: "the safe margin between client deadline and lease TTL; case 09, fixed",
        shared: ETCD_SHARED,
        leaves_out: ETCD_LEAVES_OUT,
        clients_default: 2,
        ticks_default: 4,
        ticks_unit: "ticks",
        symmetric: false,
    },
];

/// The size of the clock-skew models: a TTL of 2 ticks on the server's clock (4 units at 2 units
/// a tick), clients' clocks at 0.5× to 1× (1 or 2 units a tick).
pub const SKEW_TTL_UNITS: u8 = 4;
pub const SKEW_CLOCKS: Clocks = Clocks { server_units_per_tick: 2, client_units_per_tick: (1, 2) };

pub fn info(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.name == name)
}

pub fn names() -> Vec<&'static str> {
    MODELS.iter().map(|m| m.name).collect()
}

/// How to run one model.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub clients: Option<usize>,
    pub ticks_max: Option<u8>,
    pub search: Search,
}

/// A built model of one of the three worlds.
pub enum Built {
    Etcd(EtcdLock),
    Zk(ZkLockModel),
    Election(Election),
}

/// Builds the model `name` with `clients` clients and a tick (or term) bound.
pub fn build(name: &str, clients: usize, ticks_max: u8) -> Result<Built, String> {
    let known = || format!("unknown model {name:?}; known: {}", names().join(", "));
    info(name).ok_or_else(known)?;
    if !(CLIENTS_MIN..=CLIENTS_MAX).contains(&clients) {
        return Err(format!("--clients {clients}: must be in {CLIENTS_MIN}..={CLIENTS_MAX}"));
    }
    if ticks_max > TICKS_MAX {
        return Err(format!("--max-ticks {ticks_max}: must be at most {TICKS_MAX}"));
    }
    let three = clients >= 3;
    let built = match name {
        "lease-lock" | "lease-lock-fenced" => {
            let fenced = name == "lease-lock-fenced";
            let mut config = etcd_base(clients, ticks_max, lease_lock_expectations(fenced));
            config.resource = if fenced { ResourceMode::Fenced } else { ResourceMode::Unfenced };
            Built::Etcd(EtcdLock::new(config))
        }
        "grant-to-expired-waiter" | "grant-to-expired-waiter-fixed" => {
            let fixed = name.ends_with("-fixed");
            let mut config = etcd_base(clients, ticks_max, grant_expectations(fixed, three));
            config.fault = EtcdFault::PauseWhileWaiting;
            config.session_check = if fixed { SessionCheck::Shipped } else { SessionCheck::Skipped };
            Built::Etcd(EtcdLock::new(config))
        }
        "clock-skew" | "clock-skew-margin" => {
            let margin = name == "clock-skew-margin";
            let deadline = if margin { safe_deadline_units(SKEW_TTL_UNITS, SKEW_CLOCKS) } else { SKEW_TTL_UNITS };
            Built::Etcd(EtcdLock::new(skew_config(clients, ticks_max, deadline, skew_expectations(margin))))
        }
        "queue-lock" | "herd-lock" => {
            let herd = name == "herd-lock";
            let recipe = if herd { ZkLockConfig::HERD } else { ZkLockConfig::QUEUE };
            let expectations = zk_lock_expectations(herd, three);
            Built::Zk(ZkLockModel::new(zk_config(clients, recipe, Fault::CloseQueuedSession, expectations)))
        }
        "lost-wakeup" | "lost-wakeup-fixed" => {
            let bug = name == "lost-wakeup";
            let recipe = ZkLockConfig { recheck_vanished: !bug, ..ZkLockConfig::QUEUE };
            let mut config = zk_config(clients, recipe, Fault::CloseQueuedSession, lost_wakeup_expectations(bug));
            config.faults_max = 0;
            Built::Zk(ZkLockModel::new(config))
        }
        "orphaned-sequential-node" | "orphaned-sequential-node-fixed" => {
            let bug = name == "orphaned-sequential-node";
            let recipe = ZkLockConfig { unique_tag: !bug, ..ZkLockConfig::QUEUE };
            Built::Zk(ZkLockModel::new(zk_config(clients, recipe, Fault::LoseCreateReply, orphan_expectations(bug))))
        }
        "election" | "election-unfenced" => {
            let fenced = name == "election";
            let config = ElectionConfig {
                nodes: clients,
                terms_max: ticks_max,
                resource: if fenced { ResourceMode::Fenced } else { ResourceMode::Unfenced },
                expectations: election_expectations(fenced, three),
            };
            Built::Election(Election::new(config))
        }
        _ => return Err(known()),
    };
    Ok(built)
}

/// The largest client deadline (in client clock units) that always ends the holder's belief no
/// later than the server's expiry: the TTL in true time, read on the slowest client clock.
pub fn safe_deadline_units(ttl_units: u8, clocks: Clocks) -> u8 {
    let ttl_ticks = ttl_units.div_ceil(clocks.server_units_per_tick);
    ttl_ticks * clocks.client_units_per_tick.0
}

/// The clock-skew world with a given client deadline (also used to search for the margin).
pub fn skew_config(clients: usize, ticks_max: u8, deadline_units: u8, expectations: Vec<Expectation>) -> EtcdConfig {
    let mut config = etcd_base(clients, ticks_max, expectations);
    config.ttl_units = SKEW_TTL_UNITS;
    config.clocks = SKEW_CLOCKS;
    config.fault = EtcdFault::CutOffHolder;
    config.client_deadline_units = Some(deadline_units);
    config.resource = ResourceMode::Unfenced;
    config
}

/// The ZooKeeper lock world with the shipped recipe's variant `recipe` and one fault.
pub fn zk_config(clients: usize, recipe: ZkLockConfig, fault: Fault, expectations: Vec<Expectation>) -> ZkConfig {
    ZkConfig { clients, recipe, fault, faults_max: 1, expectations }
}

fn etcd_base(clients: usize, ticks_max: u8, expectations: Vec<Expectation>) -> EtcdConfig {
    EtcdConfig {
        clients,
        ticks_max,
        ttl_units: 2,
        resource: ResourceMode::Unfenced,
        fault: EtcdFault::Pause,
        faults_max: 1,
        session_check: SessionCheck::Shipped,
        clocks: Clocks::TRUE_TIME,
        client_deadline_units: None,
        rounds: 1,
        expectations,
    }
}

/// Checks the model `name`.
pub fn run(name: &str, options: &RunOptions) -> Result<ModelReport, String> {
    let info = info(name).ok_or_else(|| format!("unknown model {name:?}; known: {}", names().join(", ")))?;
    let clients = options.clients.unwrap_or(info.clients_default);
    let ticks_max = options.ticks_max.unwrap_or(info.ticks_default);
    let built = build(name, clients, ticks_max)?;
    let (search, properties, explored) = match &built {
        Built::Etcd(model) => check(model, options.search)?,
        Built::Zk(model) => check(model, options.search)?,
        Built::Election(model) => check(model, options.search)?,
    };
    Ok(ModelReport {
        model: info.name,
        summary: info.summary,
        clients,
        ticks_max,
        ticks_unit: info.ticks_unit,
        search,
        states: explored.0,
        unique_states: explored.1,
        max_depth: explored.2,
        seconds: explored.3,
        properties,
    })
}

type Counts = (usize, usize, usize, f64);

/// Runs stateright, then finds a shortest counterexample for each `always` property it broke,
/// and tells every discovery as a trace.
fn check<M: CheckedModel>(model: &M, search: Search) -> Result<(Search, Vec<PropertyResult>, Counts), String> {
    let explored = runner::explore(model, search)?;
    let broken: Vec<&'static str> = model
        .expectations()
        .iter()
        .filter(|e| e.expected.kind() == crate::checked::Kind::Always)
        .map(|e| e.property)
        .filter(|name| explored.discoveries.contains_key(name))
        .collect();
    let shortest = shortest::search(model, &broken);
    let properties = model
        .expectations()
        .iter()
        .map(|e| {
            let found = explored.discoveries.get(e.property);
            let short = shortest.get(e.property);
            let path = short.or(found);
            PropertyResult {
                name: e.property,
                kind: e.expected.kind(),
                expected: e.expected,
                discovered: found.is_some(),
                trace: path.map(|actions| tell(model, actions)),
                shortest: short.is_some(),
            }
        })
        .collect();
    let counts = (explored.states, explored.unique_states, explored.max_depth, explored.seconds);
    Ok((search, properties, counts))
}

/// Replays `actions` from the initial state and describes each step.
pub fn tell<M: CheckedModel>(model: &M, actions: &[M::Action]) -> Vec<crate::trace::TraceStep> {
    let mut state = model.init_states().remove(0);
    let mut steps = Vec::with_capacity(actions.len());
    for action in actions {
        let next = model.next_state(&state, action.clone()).expect("a recorded action applies");
        steps.push(model.describe(&state, action, &next));
        state = next;
    }
    steps
}

/// Serves stateright's Explorer for the model on `addr` (127.0.0.1 only); blocks for good.
pub fn serve(name: &str, options: &RunOptions, addr: SocketAddr) -> Result<(), String> {
    if addr.ip() != std::net::Ipv4Addr::LOCALHOST {
        return Err(format!("--explore {addr}: the Explorer binds to 127.0.0.1 only"));
    }
    let info = info(name).ok_or_else(|| format!("unknown model {name:?}; known: {}", names().join(", ")))?;
    let clients = options.clients.unwrap_or(info.clients_default);
    let ticks_max = options.ticks_max.unwrap_or(info.ticks_default);
    let threads = options.search.threads;
    match build(name, clients, ticks_max)? {
        Built::Etcd(model) => drop(stateright::Model::checker(model).threads(threads).serve(addr)),
        Built::Zk(model) => drop(stateright::Model::checker(model).threads(threads).serve(addr)),
        Built::Election(model) => drop(stateright::Model::checker(model).threads(threads).serve(addr)),
    }
    Ok(())
}

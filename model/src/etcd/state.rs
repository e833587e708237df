//! The state of the etcd lock world: the server's store and lessor (the shipped cores), the
//! resource (the shipped core), each client's recipe (the shipped `EtcdMutex`), the true time,
//! and a monitor that remembers what the `always` properties must never see.

use coordsim_core::clock::LocalTime;
use coordsim_core::lessor::Lessor;
use coordsim_core::recipe::EtcdStep;
use coordsim_core::recipe::mutex::EtcdMutex;
use coordsim_core::resource::Resource;
use coordsim_core::store::{Command, CommandResponse, KeyRange, LeaseId, RangeRequest, Revision, Store};

use super::config::EtcdConfig;
use crate::fingerprint::Hashed;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// True time, in ticks.
    pub now: u8,
    pub store: Hashed<Store>,
    pub lessor: Hashed<Lessor>,
    pub resource: Hashed<Resource>,
    /// In client order (c1 first): roles never move (no symmetry reduction here, see mod.rs).
    pub clients: Vec<Client>,
    /// Faults injected so far.
    pub faults: u8,
    /// Grants so far: a holder's grant number orders grants in true time.
    pub grants: u8,
    pub monitor: Monitor,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// The session lease, granted before the run.
    pub lease: LeaseId,
    pub phase: Phase,
    pub fault: Option<ClientFault>,
    pub rounds_done: u8,
    /// Units of this client's clock since its last acknowledged keepalive (kept at 0 when no
    /// client deadline is configured, so that it adds no states).
    pub since_ack_units: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientFault {
    Paused,
    CutOff,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    /// The recipe asked for `next` (a txn or a range), not yet sent.
    Locking {
        mutex: Hashed<EtcdMutex>,
        next: Hashed<EtcdStep>,
    },
    /// Watching `key` for a delete from revision `from`; `notified` once the watch saw it.
    Waiting {
        mutex: Hashed<EtcdMutex>,
        key: String,
        from: Revision,
        notified: bool,
    },
    /// Believes it holds the lock.
    Holding {
        key: String,
        token: Revision,
        grant: u8,
        wrote: bool,
    },
    Done(End),
}

/// Why a client stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// Released the lock after its last round.
    Released,
    /// The recipe failed (`SessionExpired`, or the store refused the create: lease not found).
    LockFailed,
    /// A keepalive was answered "lease not found".
    SessionExpired,
    /// The fenced resource rejected its write: it gave the lock up.
    WriteRejected,
    /// Its own clock passed its deadline without an acknowledged keepalive.
    DeadlinePassed,
}

/// What the `always` properties must never see; set once, when it happens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Monitor {
    /// The resource accepted a write from a holder whose grant is older than that of a write
    /// it had already accepted (the simulator's `mutual_exclusion`).
    pub stale_grant_accepted: bool,
    /// The newest grant (by grant number) whose holder's write the resource accepted.
    pub newest_accepted_grant: u8,
    /// The resource accepted a token lower than one it had accepted (`fencing`).
    pub token_went_back: bool,
    /// The resource turned a stale write away (fenced).
    pub stale_write_rejected: bool,
    /// A client was told it holds the lock while its lease no longer existed (case 02).
    pub granted_to_dead_session: bool,
    /// One delete woke more than one queued waiter (a herd).
    pub herd: bool,
}

impl State {
    pub fn init(config: &EtcdConfig) -> State {
        let mut store = Store::new();
        let mut lessor = Lessor::default();
        lessor.promote(LocalTime(0), [], false);
        let ttl_ms = u64::from(config.ttl_units);
        let clients = (0..config.clients)
            .map(|_| {
                let lease = match store.apply(&Command::LeaseGrant { id: 0, ttl_ms }) {
                    CommandResponse::LeaseGrant { id, .. } => id,
                    other => panic!("the store refused a session lease: {other:?}"),
                };
                lessor.on_grant(lease, ttl_ms, LocalTime(0));
                Client { lease, phase: Phase::Idle, fault: None, rounds_done: 0, since_ack_units: 0 }
            })
            .collect();
        State {
            now: 0,
            store: Hashed::new(store),
            lessor: Hashed::new(lessor),
            resource: Hashed::new(Resource::new(config.resource)),
            clients,
            faults: 0,
            grants: 0,
            monitor: Monitor::default(),
        }
    }

    pub fn lease_alive(&self, lease: LeaseId) -> bool {
        self.store.lease(lease).is_some()
    }

    pub fn key_exists(&self, key: &str) -> bool {
        let read = self.store.range(&RangeRequest::new(KeyRange::Key(key.to_string())));
        read.is_ok_and(|response| !response.kvs.is_empty())
    }

    pub fn holders(&self) -> usize {
        self.clients.iter().filter(|c| matches!(c.phase, Phase::Holding { .. })).count()
    }

    pub fn all_done(&self) -> bool {
        self.clients.iter().all(|c| matches!(c.phase, Phase::Done(_)))
    }
}

/// The server's clock at true time `now`, as the lessor reads it: one clock unit is one
/// millisecond of local time, so the lessor's TTLs (in ms) are TTLs in units.
pub fn server_time(config: &EtcdConfig, now: u8) -> LocalTime {
    let units = u64::from(now) * u64::from(config.clocks.server_units_per_tick);
    LocalTime(0).plus_ms(units)
}

//! The knobs of the etcd lock world: which fault, which resource, which clocks, which switch.
//! Each model of the registry is one setting of these (see `crate::registry`).

use coordsim_core::resource::ResourceMode;

use crate::checked::Expectation;

/// The lock's name, as in the simulator's scenarios and the recipe's tests.
pub const LOCK: &str = "/lock/r";

/// The fault the nemesis may inject (at most `faults_max` times in a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A client that is locking, waiting or holding stops for any number of ticks (a GC
    /// pause): it runs no code and sends no keepalives; time and the servers go on.
    Pause,
    /// Only a client waiting for its predecessor may pause (case 02: the waiter's lease expires
    /// while it waits; the holders stay alive).
    PauseWhileWaiting,
    /// A holder is cut off from the servers for good (it still reaches the resource and keeps
    /// acting until its own deadline): case 09.
    CutOffHolder,
}

/// Whether the waiter re-reads its own key before it reports the lock acquired (step 4 of the
/// recipe, `EtcdMutex`'s `CheckingOwnKey`). etcd 3.4.3's server-side Lock skipped it (case 02).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionCheck {
    /// The recipe as shipped: a waiter whose lease expired gets `SessionExpired`.
    Shipped,
    /// The bug switch: the re-read is skipped and the lock is reported acquired.
    Skipped,
}

/// Clock rates, in clock units per tick of true time. The server's lessor runs on the server
/// clock; a client's deadline runs on its own clock, which advances by any amount in
/// `client_units_per_tick` each tick (a rate bounded from both sides, chosen anew every tick).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clocks {
    pub server_units_per_tick: u8,
    pub client_units_per_tick: (u8, u8),
}

impl Clocks {
    /// Every clock at true time, one unit per tick.
    pub const TRUE_TIME: Clocks = Clocks { server_units_per_tick: 1, client_units_per_tick: (1, 1) };
}

#[derive(Clone, Debug)]
pub struct EtcdConfig {
    pub clients: usize,
    /// True time never passes this tick.
    pub ticks_max: u8,
    /// The session lease's TTL, in server clock units.
    pub ttl_units: u8,
    pub resource: ResourceMode,
    pub fault: Fault,
    pub faults_max: u8,
    pub session_check: SessionCheck,
    pub clocks: Clocks,
    /// `Some(d)`: a client stops acting `d` units of its own clock after its last acknowledged
    /// keepalive (the simulator's `client_deadline`). `None`: etcd's default, it acts until its
    /// session learns that the lease is gone.
    pub client_deadline_units: Option<u8>,
    /// Acquisitions per client.
    pub rounds: u8,
    /// The properties this model judges and their expected results.
    pub expectations: Vec<Expectation>,
}

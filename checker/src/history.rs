//! The history: what happened in one run, as the checkers read it.
//!
//! This format is the contract between runners (the simulator, later real clusters) and the
//! checkers. Every entry carries the true time of the run in nanoseconds since the run started
//! (never a node's local clock) and the node that recorded it.
//!
//! Operations follow Jepsen's model: a client `invoke`s an operation, which completes exactly
//! once with `ok` (it happened), `fail` (it certainly did not happen) or `info` (unknown: it may
//! or may not have happened, so checkers keep it open until the end of the history). An
//! operation with no completion at all is treated like `info`.
//!
//! JSON shape (schema [`SCHEMA`]):
//! ```json
//! {"schema":"coordsim-history/1","scenario":"split-brain-gc-pause","seed":7,"duration_ns":30000000000,
//!  "nodes":[{"name":"s1","role":"server"},...],
//!  "entries":[{"time_ns":12000000,"node":"c1","type":"invoke","op":3,"call":{"f":"lock","name":"/lock/r","lease":1}}, ...]}
//! ```
//!
//! # Key-value operations, watches and wakeups
//!
//! Besides the lock workload, a runner may record (each form below is one entry's JSON, without
//! `time_ns` and `node`):
//! - key-value operations, as operations with [`Call::Put`], [`Call::Get`], [`Call::Delete`] and
//!   [`Call::Cas`] and their [`Return`]s; every write that completes `ok` carries the store
//!   revision it created, so the watch checker can match deliveries to writes:
//!   `{"type":"invoke","op":7,"call":{"f":"put","key":"k1","value":"v7"}}` then
//!   `{"type":"ok","op":7,"ret":{"f":"put","revision":12}}`;
//! - watch streams, recorded by the watching client: [`Event::WatchStart`],
//!   [`Event::WatchEvents`], [`Event::WatchProgress`], [`Event::WatchEnd`];
//! - lock queue wakeups, recorded by a waiting client: [`Event::Wakeup`];
//! - a ZooKeeper client's connection states (Curator's names), recorded by the client:
//!   [`Event::Connection`];
//! - lease checkpoints, recorded by the leader: [`Event::LeaseCheckpoint`]; the moment a new
//!   leader's lessor takes over: [`Event::LessorPromoted`];
//! - user code under the Testbed: calls of the etcd and ZooKeeper APIs that no model judges as
//!   [`Call::Api`] (naming what they may write, which the key-value checkers then leave out), and
//!   the code's own events as [`Event::User`].
//!
//! Checkers that need these pass trivially (and say so) on histories without them.
//!
//! # Histories recorded on real clusters
//!
//! `coordsim real` writes the same format with `"recorded_on":"real etcd"` (or
//! `"real zookeeper"`): `seed` is the run's number, `time_ns` is the machine's monotonic clock since
//! the run began, and `lease_expiry` entries are observed from outside the cluster (just after
//! the lease was last seen alive). The field is absent in simulated histories.
//!
//! # The service's timing
//!
//! `service_timing` carries the timers a checker's bound is made of ([`ServiceTiming`]: the
//! heartbeat, the election timeout's range, the lessor's expiry tick and what a new leader adds
//! to every lease), e.g. `"service_timing":{"heartbeat_ms":50,"election_timeout_min_ms":150,
//! "election_timeout_max_ms":300,"lease_expiry_tick_ms":50,"lease_promotion_extend_ms":150}`.
//! The simulator writes its servers'; `coordsim real etcd` its cluster's (etcd's flags and
//! lessor). A history without it is judged with the simulator's ([`ServiceTiming::SIMULATED`]).

use serde::{Deserialize, Serialize};

/// Schema identifier written into every history; bump on any incompatible change.
pub const SCHEMA: &str = "coordsim-history/1";

/// One run's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    pub schema: String,
    pub scenario: String,
    pub seed: u64,
    /// True time at which the run stopped recording.
    pub duration_ns: u64,
    pub nodes: Vec<NodeInfo>,
    /// In recording order, which is non-decreasing in `time_ns`.
    pub entries: Vec<Entry>,
    /// Where the history was recorded when not in the simulator (`real etcd`, `real zookeeper`):
    /// then `seed` is the run's number, times are wall time, and the servers' own records are
    /// missing (lease expiries are observed from outside), so only what
    /// [`crate::properties::Property::judged_on`] names is judged. Absent for simulated runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_on: Option<String>,
    /// The time model a simulated run took its durations from (a profile's name, e.g.
    /// `etcd-3.4-loopback`; docs/time.md): what world of time its figures and verdicts belong
    /// to. Absent: a run without a time model (`profile = "none"`), or a real run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_model: Option<String>,
    /// The service's own timing in this run: what the checkers' bounds are made of. Absent in
    /// histories written before it existed, by hand, or on a service whose timing is not of
    /// this shape (ZooKeeper): read as [`ServiceTiming::SIMULATED`] ([`History::service_timing`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_timing: Option<ServiceTiming>,
    /// How the leases' lives were seen when the runner could not read the servers' own records
    /// (a real cluster, asked from outside which leases live). Absent: every `lease_expiry` is the
    /// leader's own record, exact (the simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_observation: Option<LeaseObservation>,
    /// How deep each node's work queue was, by node name (a simulated run with a time model:
    /// its servers' and its resource's CPUs). Absent: no time model, or a real run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<QueueSeries>,
}

/// How deep one node's work queue was over a run (sim/core/src/queue_depth.rs): for each window
/// of `window_ms` true time in which its CPU held work, the most pieces of work (client requests,
/// Raft messages, applies) waiting for it or on it at once. Exact, not sampled; windows with
/// nothing queued are left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSeries {
    pub node: String,
    pub window_ms: u64,
    /// `[start_ms, deepest]` per window, in time order.
    pub deepest: Vec<[u64; 2]>,
}

/// Leases observed from outside by polling (real/src/run.rs `observe_sessions`): each
/// `lease_expiry` then happened somewhere in its `time_ns..=latest_ns` (the last answer that
/// showed the lease alive, the first that showed it gone), and a lease with no expiry record was
/// last seen alive at `until_ns`. The lease checkers widen their bounds by exactly these
/// intervals and state the resolution in their verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseObservation {
    /// How often the runner asked (true time, ms): the usual width of an expiry's interval,
    /// wider while the cluster did not answer.
    pub poll_ms: u64,
    /// True time of the last answer: what the run did after it is unobserved.
    pub until_ns: u64,
    /// Whether the owners journal every renewal (etcd's LeaseKeepAlive, sent by our client);
    /// false where the client library renews by itself, unseen (the zookeeper-client crate's
    /// pings): then a lease's last renewal is not known and the lease properties are not judged.
    pub renewals_recorded: bool,
}

/// The timing of the service a history was recorded on, as far as a checker's bound depends on
/// it: Raft's timers and the lessor's. All in ms, each by the clock of the server that keeps
/// it (a server's monotonic clock, which clock faults skew). The runner writes it: a simulated
/// run its servers' settings (sim/src/server), a real etcd run the flags its members started
/// with (real/src/cluster/etcd.rs) and etcd's built-in lessor timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceTiming {
    /// How often a leader sends heartbeats (etcd `--heartbeat-interval`).
    pub heartbeat_ms: u64,
    /// A follower stands for election after a timeout drawn from
    /// `election_timeout_min_ms..election_timeout_max_ms` (etcd: `--election-timeout` to twice
    /// it, raft's `randomizedElectionTimeout`).
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    /// How often the leader's lessor looks for expired leases (etcd: 500 ms, lessor.go
    /// `runLoop`).
    pub lease_expiry_tick_ms: u64,
    /// What a new leader's lessor adds to every lease when it takes over (etcd:
    /// `lessor.Promote(electionTimeout)`, server.go).
    pub lease_promotion_extend_ms: u64,
    /// How long after a follower answers a renewal the leader may apply it: 0 where a follower
    /// relays the renewal and answers after the leader (etcd's LeaseKeepAlive); ZooKeeper's
    /// follower answers a ping itself and reports its clients' touches to the leader in its
    /// reply to the leader's next ping, sent every half tick (`LearnerSessionTracker`,
    /// `Learner.ping`, `Leader.lead`). Absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub renewal_relay_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ServiceTiming {
    /// The simulator's servers (sim/src/server: `RaftTiming::default`, `EXPIRY_TICK`, the lease
    /// policy's promotion extension): also what a history without the field is read with.
    pub const SIMULATED: ServiceTiming = ServiceTiming {
        heartbeat_ms: 50,
        election_timeout_min_ms: 150,
        election_timeout_max_ms: 300,
        lease_expiry_tick_ms: 50,
        lease_promotion_extend_ms: 150,
        renewal_relay_ms: 0,
    };
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeInfo {
    pub name: String,
    pub role: NodeRole,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Server,
    Client,
    Resource,
}

/// Identifies one operation across its invoke and its completion.
pub type OpId = u64;
/// Identifies one fault across its start and its end.
pub type FaultId = u64;
/// Identifies one watch stream across its start, deliveries and end; unique within a history.
pub type WatchId = u64;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// True simulated time since the start of the run.
    pub time_ns: u64,
    /// The node that recorded the entry (a client, a server, the resource, or "nemesis").
    pub node: String,
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A client started an operation.
    Invoke { op: OpId, call: Call },
    /// The operation happened, with this result.
    Ok { op: OpId, ret: Return },
    /// The operation certainly did not happen.
    Fail { op: OpId, error: String },
    /// The outcome is unknown (a timeout, a lost reply).
    Info { op: OpId, error: String },
    /// The nemesis started or ended a fault. `targets` are the nodes it hit (resolved: a fault
    /// aimed at "the leader" names the server that was leader); `detail` gives its parameters
    /// ("rate 0.5x", "cut s1 | s2 s3").
    Fault {
        fault: FaultId,
        phase: Phase,
        kind: FaultKind,
        targets: Vec<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
    /// A client started or stopped believing it holds a lock.
    Belief {
        lock: String,
        /// The fencing token of the grant the belief is about.
        token: i64,
        phase: Phase,
        /// Why a belief ended ("unlocked", "session expired", "write rejected", ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The protected resource decided on a write.
    Resource {
        resource: String,
        client: String,
        token: i64,
        value: String,
        accepted: bool,
        /// The highest token the resource had accepted before this write (0 = none).
        highest_before: i64,
    },
    /// The node's clock reads `local_ns` (ns since the run started, by that clock) at this true
    /// time and from now on advances at `rate_ppm` (1_000_000 = true speed). Recorded at the
    /// start for every node whose clock is not true time, and at each change (jump, rate change,
    /// strobe flip), so local time can be computed for any entry. `clock` says which of the
    /// node's clocks the record is about: both while they agree (no jumps), else the wall and the
    /// monotonic clock each have records of their own.
    Clock {
        local_ns: i64,
        rate_ppm: u64,
        #[serde(default, skip_serializing_if = "WhichClock::is_both")]
        clock: WhichClock,
    },
    /// A server changed role, as its own Raft metrics say.
    Role { role: RaftRole, term: u64 },
    /// A lease expired: the leader's lessor found it past its deadline (by the leader's local
    /// clock), and its revocation is now committed and applied on that leader (the lease's keys
    /// are deleted). Recorded by that leader. Every expiry must be recorded, once: a leader that
    /// dies between applying the revocation and recording it leaves a lease that, to the
    /// checkers, never expired (`lease_liveness` fails), so a runner that can lose the record
    /// this way should record it where the revocation is applied instead.
    ///
    /// A runner that only observes expiries (a real cluster, polled: real/src/run.rs) records
    /// the entry just after the lease was last seen alive and sets `latest_ns` to the true time
    /// it was first seen gone: the expiry happened at some time in `time_ns..=latest_ns`. Without
    /// `latest_ns` (the simulator) the entry's time is the expiry's.
    LeaseExpiry {
        lease: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        latest_ns: Option<u64>,
    },
    /// The leader checkpointed a lease's remaining time to live through the log, so that a new
    /// leader continues from it instead of restarting the lease at its full TTL. Recorded by that
    /// leader once the checkpoint is committed and applied on it; `remaining_ms` is by the
    /// leader's clock at the moment it took the checkpoint.
    /// `{"type":"lease_checkpoint","lease":5,"remaining_ms":2400}`
    LeaseCheckpoint { lease: i64, remaining_ms: u64 },
    /// A leader's lessor took over the leases: from now on this server expires and renews them,
    /// continuing each from its last applied checkpoint. A leader promotes its lessor once it has
    /// applied an entry of its own term (as etcd does), not at its election: only then has it
    /// applied every checkpoint committed before it. Recorded by that leader; `term` is its term.
    /// `{"type":"lessor_promoted","term":3}`
    LessorPromoted { term: u64 },
    /// A client's watch stream is established: from now on it delivers every change to `key` (or,
    /// with `prefix`, to every key that starts with `key`) at revisions from `start_revision` on,
    /// in revision order. For a watch asked to start "now", `start_revision` is the revision the
    /// server said the stream starts at (etcd: the created response's header revision + 1); 0 if
    /// the recorder did not learn it (the `watch` checker then owes the stream only what provably
    /// came after its start).
    /// Recorded by the client when the server confirms the stream. `watch` is unique within the
    /// history (a stream resumed elsewhere after a failure is a new stream).
    /// `{"type":"watch_start","watch":1,"key":"k1","start_revision":5}`,
    /// `{"type":"watch_start","watch":2,"key":"/locks/r/","prefix":true,"start_revision":1}`
    WatchStart {
        watch: WatchId,
        key: String,
        #[serde(default, skip_serializing_if = "is_false")]
        prefix: bool,
        start_revision: i64,
    },
    /// The client received one response of the stream carrying changes, in the order received.
    /// All changes of one revision (one transaction) must arrive in one response.
    /// `{"type":"watch_events","watch":1,"events":[{"revision":5,"key":"k1","kind":"delete"},
    /// {"revision":6,"key":"k1","kind":"put","value":"v9"}]}`
    WatchEvents { watch: WatchId, events: Vec<WatchedChange> },
    /// The client received a progress notification: every change at a revision up to `revision`
    /// has been delivered on this stream.
    /// `{"type":"watch_progress","watch":1,"revision":9}`
    WatchProgress { watch: WatchId, revision: i64 },
    /// The stream ended. With `compacted`, the server refused it because the revisions it still
    /// had to deliver were compacted away (etcd's `CompactRevision`, given as
    /// `compact_revision`); no change below that revision will come.
    /// `{"type":"watch_end","watch":1,"reason":"cancelled"}`,
    /// `{"type":"watch_end","watch":1,"reason":"compacted","compact_revision":7}`
    WatchEnd {
        watch: WatchId,
        reason: WatchEndReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compact_revision: Option<i64>,
    },
    /// A waiting lock client woke up: the watch it waited on fired (its predecessor's key, or the
    /// lock key, was deleted) and it goes to look at the queue again. `waiter` is the client's
    /// own entry in the queue (etcd: its key under the lock prefix; ZooKeeper: its sequential
    /// node), or the client's name for a recipe without one (a compare-and-swap loop).
    /// Recorded by the waiting client.
    /// `{"type":"wakeup","lock":"/locks/r","waiter":"/locks/r/694d7c1e2f3a"}`
    Wakeup { lock: String, waiter: String },
    /// A ZooKeeper client's connection changed state, in Curator's names (`ConnectionState`):
    /// `connected` when its session is created, `suspended` when the connection is lost
    /// (ZooKeeper's `Disconnected`: the server dropped it, or nothing was heard for the read
    /// timeout), `reconnected` when a server took the session again, `lost` when the ensemble said
    /// the session expired on reconnection, or when Curator's simulated expiry ended it on the
    /// client (a session timeout after `suspended`). `server` is the server the client is
    /// connected to (or was, for `suspended`); `reason` says why, where there is one. Recorded by
    /// the client.
    /// `{"type":"connection","state":"suspended","server":"s3","reason":"s3: not serving"}`
    Connection {
        state: ConnectionState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An event of the user's code under test, recorded through the Testbed (`Ctx::record`):
    /// `name` says what happened, `attrs` the details, for checkers of the user's own.
    /// `{"type":"user","name":"own","attrs":{"partition":"3"}}`
    User {
        name: String,
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        attrs: std::collections::BTreeMap<String, String>,
    },
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One change delivered on a watch stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchedChange {
    /// The revision of the change (the key's mod_revision; for a delete, the revision of the
    /// delete).
    pub revision: i64,
    pub key: String,
    pub kind: ChangeKind,
    /// The value a put wrote, when the runner records it; checked against the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Put,
    Delete,
}

/// Why a watch stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEndReason {
    /// The client cancelled the stream.
    Cancelled,
    /// The server ended it: its start (or next) revision was compacted (see `compact_revision`).
    Compacted,
    /// The stream broke (its server went away, the connection was lost); the client may start a
    /// new stream.
    Broken,
}

/// A ZooKeeper client's connection state, as Apache Curator names them
/// (`org.apache.curator.framework.state.ConnectionState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    Connected,
    Suspended,
    Reconnected,
    Lost,
}

impl ConnectionState {
    /// Curator's upper-case name, as its logs and docs write it.
    pub fn curator_name(self) -> &'static str {
        match self {
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Suspended => "SUSPENDED",
            ConnectionState::Reconnected => "RECONNECTED",
            ConnectionState::Lost => "LOST",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Start,
    End,
}

/// Which of a node's clocks a `clock` record describes. A real machine has two: the wall clock,
/// which jumps when the time is stepped, and the monotonic clock, which never jumps; both follow
/// a faster or slower oscillator. Service timers read the monotonic one (etcd's lessor and Raft,
/// ZooKeeper's session tracker); Redis key expiry and timestamps read the wall clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhichClock {
    /// Both clocks (they agree: no jump on this node so far). Histories written before nodes had
    /// two clocks have only these.
    #[default]
    Both,
    Wall,
    Monotonic,
}

impl WhichClock {
    pub fn is_both(&self) -> bool {
        *self == WhichClock::Both
    }

    /// Whether a record of this kind describes the `reader` clock.
    pub fn describes(self, reader: WhichClock) -> bool {
        self == WhichClock::Both || self == reader
    }
}

/// The kinds of fault the nemesis injects (see the scenario format for their parameters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A process pause (GC pause): the node runs no code while time and the network go on.
    #[default]
    Pause,
    /// The node is killed; at the end of the fault it restarts (a server with its durable state).
    Crash,
    /// Network links are cut.
    Partition,
    /// The node's clock jumps (instantaneous: start and end at once).
    ClockJump,
    /// The node's clock runs at another rate.
    ClockRate,
    /// The node's clock flips between two offsets.
    ClockStrobe,
    /// Messages are lost at random.
    PacketLoss,
    /// Message latency is raised.
    Latency,
    /// Replies to a client are dropped (the requests still take effect).
    DropReplies,
    /// Messages on one directed link are held back.
    LinkDelay,
    /// A server's disk syncs take this long each (a slow or saturated disk).
    SlowDisk,
    /// A server's CPU costs are multiplied (a starved or throttled CPU).
    SlowCpu,
}

impl FaultKind {
    /// The name used in scenario files and histories (`clock-rate`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Crash => "crash",
            FaultKind::Partition => "partition",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::ClockRate => "clock-rate",
            FaultKind::ClockStrobe => "clock-strobe",
            FaultKind::PacketLoss => "packet-loss",
            FaultKind::Latency => "latency",
            FaultKind::DropReplies => "drop-replies",
            FaultKind::LinkDelay => "link-delay",
            FaultKind::SlowDisk => "slow-disk",
            FaultKind::SlowCpu => "slow-cpu",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RaftRole {
    Leader,
    Follower,
    Candidate,
    Learner,
    Shutdown,
}

fn one_permit() -> u32 {
    1
}

fn is_one_permit(permits: &u32) -> bool {
    *permits == 1
}

/// What a client asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum Call {
    LeaseGrant {
        ttl_ms: u64,
    },
    LeaseKeepAlive {
        lease: i64,
    },
    /// A request other than a ping that renews the session `lease` as it reaches a server: a
    /// ZooKeeper server touches the session of every request it reads
    /// (`ZooKeeperServer.submitRequestNow`, `touch`), and a reconnection that carries the session
    /// id revalidates it. `request` is the ZooKeeper operation (`create`, `getChildren`,
    /// `reconnect`). A renewal for the lease checkers, like a keepalive, but not one for the
    /// request-kind metrics. Recorded by the real runner's ZooKeeper client, which sees its
    /// connections' packets (real/src/zk/tap.rs).
    /// `{"f":"session_touch","lease":72057594037927937,"request":"create"}`
    SessionTouch {
        lease: i64,
        request: String,
    },
    LeaseRevoke {
        lease: i64,
    },
    /// Acquire the lock `name` under the session lease `lease`; `permits` > 1 for a counting
    /// semaphore (that many holders at once).
    Lock {
        name: String,
        lease: i64,
        #[serde(default = "one_permit", skip_serializing_if = "is_one_permit")]
        permits: u32,
    },
    /// Release the lock by deleting the holder's key.
    Unlock {
        name: String,
        key: String,
    },
    /// Write `value` to the protected resource, carrying a fencing token.
    Write {
        resource: String,
        token: i64,
        value: String,
    },
    /// Write `value` to `key` in the store. `{"f":"put","key":"k1","value":"v7"}`
    Put {
        key: String,
        value: String,
    },
    /// Read `key`, judged as a linearizable read (a ZooKeeper getData served by a lagging server
    /// fails that). `{"f":"get","key":"k1"}`
    Get {
        key: String,
    },
    /// Delete `key`. `{"f":"delete","key":"k1"}`
    Delete {
        key: String,
    },
    /// If `key` holds `expected` (`null`: the key is absent), write `new`; atomically (an etcd
    /// transaction comparing the value). `{"f":"cas","key":"k1","expected":"v7","new":"v8"}`
    Cas {
        key: String,
        #[serde(default)]
        expected: Option<String>,
        new: String,
    },
    /// A call of the user-code API (`coordsim::etcd`, `coordsim::zookeeper`) that no model here
    /// judges: a range read, a transaction over several keys or with other compares, a put with a
    /// lease. `api` is `etcd` or `zookeeper`, `method` the client method (`txn`, `get`), `detail`
    /// the request in one line. `writes` is what it may change: the key-value checkers
    /// (`linearizable`, `durability`, `watch`) leave those keys out, since their model would not
    /// see the change. `reads` is the key or prefix a range read read (etcd's `get` with a
    /// prefix), its state as of the `api` return's `revision`: a watch consumer that re-lists
    /// before it watches again (`watch_continuity`). `{"f":"api","api":"etcd","method":"txn","detail":"...","writes":[{"key":"k1"}]}`
    Api {
        api: String,
        method: String,
        detail: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        writes: Vec<Touched>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reads: Vec<Touched>,
    },
}

/// What a call of the user-code API may change in the store, when the key-value model cannot
/// judge it: one key, or every key under a prefix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Touched {
    Key(String),
    Prefix(String),
}

impl Touched {
    pub fn covers(&self, key: &str) -> bool {
        match self {
            Touched::Key(k) => k == key,
            Touched::Prefix(prefix) => key.starts_with(prefix.as_str()),
        }
    }
}

impl Call {
    /// The key of a key-value operation; `None` for the lock workload's calls.
    pub fn kv_key(&self) -> Option<&str> {
        match self {
            Call::Put { key, .. } | Call::Get { key } | Call::Delete { key } | Call::Cas { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// What an `ok` operation returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum Return {
    LeaseGranted {
        lease: i64,
        ttl_ms: u64,
    },
    LeaseKeptAlive {
        ttl_ms: u64,
    },
    LeaseRevoked,
    /// The lock is held; `token` is the holder key's create_revision (the fencing token).
    Locked {
        key: String,
        token: i64,
    },
    Unlocked,
    Written,
    /// A put took effect at store `revision`. `{"f":"put","revision":12}`
    Put {
        revision: i64,
    },
    /// A get read `value` (`null`: the key is absent) from the store at `revision` (the store's
    /// revision when the read was served, etcd's header revision).
    /// `{"f":"got","value":"v7","revision":12}`
    Got {
        #[serde(default)]
        value: Option<String>,
        revision: i64,
    },
    /// A delete removed `count` keys (0 or 1 for one key) at `revision` (when `count` is 0, the
    /// store's revision, unchanged). `{"f":"deleted","count":1,"revision":13}`
    Deleted {
        count: u64,
        revision: i64,
    },
    /// A compare-and-swap ran: `swapped` says whether the value matched and `new` was written, at
    /// `revision` (when not swapped, the store's revision, unchanged).
    /// `{"f":"cas","swapped":true,"revision":14}`
    Cas {
        swapped: bool,
        revision: i64,
    },
    /// A [`Call::Api`] call's answer in one line, with the store revision it was served at (etcd's
    /// header revision, ZooKeeper's zxid; 0 when the call has none).
    /// `{"f":"api","detail":"succeeded","revision":14}`
    Api {
        detail: String,
        revision: i64,
        /// A ZooKeeper create of an ephemeral node: the session that owns it (ZooKeeper's
        /// `Stat.ephemeralOwner`), the same id as that session's `lease_expiry`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ephemeral_owner: Option<i64>,
    },
}

impl Return {
    /// Whether this is the return a call of `call`'s kind gives, for the key-value calls (the
    /// lock workload's returns are not checked here).
    fn matches_kv_call(&self, call: &Call) -> bool {
        match (call, self) {
            (Call::Put { .. }, Return::Put { .. })
            | (Call::Get { .. }, Return::Got { .. })
            | (Call::Delete { .. }, Return::Deleted { .. })
            | (Call::Cas { .. }, Return::Cas { .. })
            | (Call::Api { .. }, Return::Api { .. }) => true,
            (Call::Put { .. } | Call::Get { .. } | Call::Delete { .. } | Call::Cas { .. } | Call::Api { .. }, _) => {
                false
            }
            (
                _,
                Return::Put { .. }
                | Return::Got { .. }
                | Return::Deleted { .. }
                | Return::Cas { .. }
                | Return::Api { .. },
            ) => false,
            _ => true,
        }
    }
}

/// The `schema` field of a JSON object (`None`: it has none), every other field skipped unread:
/// what a file is, before it is parsed whole (a `serde_json::Value` tree of a history took
/// 12-13x the file's size). Errors are serde_json's, with their line and column.
pub fn schema_of(text: &str) -> Result<Option<String>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct SchemaOnly {
        schema: Option<String>,
    }
    serde_json::from_str::<SchemaOnly>(text).map(|probe| probe.schema)
}

impl History {
    /// An empty history of a run about to start.
    pub fn new(scenario: impl Into<String>, seed: u64) -> Self {
        History {
            schema: SCHEMA.to_string(),
            scenario: scenario.into(),
            seed,
            duration_ns: 0,
            nodes: Vec::new(),
            entries: Vec::new(),
            recorded_on: None,
            time_model: None,
            service_timing: None,
            lease_observation: None,
            queues: Vec::new(),
        }
    }

    /// Each queue series names a node, has a window, and windows in time order within the run.
    fn validate_queues(&self) -> Result<(), HistoryError> {
        for (index, series) in self.queues.iter().enumerate() {
            let wrong = |field: &str, message: String| {
                Err(HistoryError::OutOfRange { field: format!("queues[{index}].{field}"), message })
            };
            if !self.nodes.iter().any(|n| n.name == series.node) {
                return wrong("node", format!("{:?} is not in `nodes`", series.node));
            }
            if series.window_ms == 0 || series.window_ms > TIME_MAX_NS / 1_000_000 {
                return wrong("window_ms", format!("{} is not a window length", series.window_ms));
            }
            let mut next_ms = 0;
            for (at, [start_ms, _]) in series.deepest.iter().enumerate() {
                if *start_ms < next_ms || start_ms % series.window_ms != 0 {
                    return wrong(
                        &format!("deepest[{at}]"),
                        format!("window start {start_ms} ms is out of order or not a multiple of window_ms"),
                    );
                }
                if start_ms.saturating_mul(1_000_000) > self.duration_ns {
                    return wrong(&format!("deepest[{at}]"), format!("window start {start_ms} ms is after the run"));
                }
                next_ms = start_ms + series.window_ms;
            }
        }
        Ok(())
    }

    /// The service's timing in this run: the recorded one, or [`ServiceTiming::SIMULATED`].
    pub fn service_timing(&self) -> ServiceTiming {
        self.service_timing.unwrap_or(ServiceTiming::SIMULATED)
    }

    /// Until when a lease with no end recorded is known to have lived: the last observation
    /// ([`LeaseObservation::until_ns`]), or the end of the run when the records are the servers'.
    pub fn leases_seen_until_ns(&self) -> u64 {
        self.lease_observation.map_or(self.duration_ns, |seen| seen.until_ns.min(self.duration_ns))
    }

    /// How the lease checkers' verdicts were reached, for their summaries: "" for the servers'
    /// own records, else the observation's resolution.
    pub fn lease_resolution_note(&self) -> String {
        match self.lease_observation {
            None => String::new(),
            Some(seen) => format!(
                " (leases observed from outside every {} ms: each expiry known within the interval between the answers that showed it alive and gone, the bounds widened by it; last answer at {})",
                seen.poll_ms,
                History::fmt_time(seen.until_ns)
            ),
        }
    }

    /// Parses a history from JSON and checks its schema.
    pub fn from_json(text: &str) -> Result<History, HistoryError> {
        // A summary.json handed over by mistake deserves a plain answer, not a type error.
        if let Ok(Some(schema)) = schema_of(text)
            && schema != SCHEMA
        {
            return Err(HistoryError::Schema { found: schema });
        }
        let history: History = serde_json::from_str(text).map_err(|e| HistoryError::Json {
            line: e.line(),
            column: e.column(),
            // serde_json repeats the position at the end of its message; it is in the prefix.
            message: e.to_string().split(" at line ").next().unwrap_or_default().to_string(),
        })?;
        if history.schema != SCHEMA {
            return Err(HistoryError::Schema { found: history.schema });
        }
        history.validate()?;
        Ok(history)
    }

    /// Checks what the types cannot: time order, known nodes, operations completed once after
    /// their invocation by the same node, beliefs ended after they started. A history that
    /// breaks these was not recorded by a correct runner, and no verdict on it means anything.
    pub fn validate(&self) -> Result<(), HistoryError> {
        let invalid = |entry: usize, field: &str, message: String| {
            Err(HistoryError::Invalid { entry, field: field.to_string(), message })
        };
        let known = |name: &str| name == "nemesis" || self.nodes.iter().any(|n| n.name == name);
        let mut last_ns = 0;
        let mut open_ops: std::collections::BTreeMap<OpId, (&str, &Call)> = std::collections::BTreeMap::new();
        let mut done_ops: std::collections::BTreeSet<OpId> = std::collections::BTreeSet::new();
        let mut open_beliefs: std::collections::BTreeSet<(&str, &str, i64)> = std::collections::BTreeSet::new();
        let mut watches = WatchValidator::default();
        // Bounds first: checkers add and scale these numbers, and a value no run records must be
        // refused here, not overflow there.
        if self.duration_ns > TIME_MAX_NS {
            return Err(HistoryError::OutOfRange {
                field: "duration_ns".into(),
                message: format!("{} is past the limit of {TIME_MAX_NS} ns (about 115 days)", self.duration_ns),
            });
        }
        if let Some(timing) = &self.service_timing {
            let fields = [
                ("heartbeat_ms", timing.heartbeat_ms),
                ("election_timeout_min_ms", timing.election_timeout_min_ms),
                ("election_timeout_max_ms", timing.election_timeout_max_ms),
                ("lease_expiry_tick_ms", timing.lease_expiry_tick_ms),
                ("lease_promotion_extend_ms", timing.lease_promotion_extend_ms),
            ];
            if let Some((field, value)) = fields.into_iter().find(|(_, ms)| *ms > TTL_MAX_MS) {
                return Err(HistoryError::OutOfRange {
                    field: format!("service_timing.{field}"),
                    message: format!("{value} ms is past the limit of {TTL_MAX_MS} ms (about 115 days)"),
                });
            }
        }
        for (index, entry) in self.entries.iter().enumerate() {
            if let Some((field, value)) = entry.event.duration_ms().filter(|(_, ms)| *ms > TTL_MAX_MS) {
                return invalid(
                    index,
                    field,
                    format!("{value} ms is past the limit of {TTL_MAX_MS} ms (about 115 days)"),
                );
            }
        }
        // Time and nodes first: a disordered history would otherwise surface as some later,
        // more confusing complaint.
        for (index, entry) in self.entries.iter().enumerate() {
            if entry.time_ns < last_ns {
                return invalid(
                    index,
                    "time_ns",
                    format!("{} is before the previous entry's {last_ns}", entry.time_ns),
                );
            }
            if entry.time_ns > self.duration_ns {
                return invalid(
                    index,
                    "time_ns",
                    format!("{} is after the end of the run ({})", entry.time_ns, self.duration_ns),
                );
            }
            last_ns = entry.time_ns;
            if !known(&entry.node) {
                return invalid(index, "node", format!("{:?} is not in `nodes`", entry.node));
            }
        }
        self.validate_queues()?;
        for (index, entry) in self.entries.iter().enumerate() {
            match &entry.event {
                Event::Invoke { op, call } => {
                    if open_ops.contains_key(op) || done_ops.contains(op) {
                        return invalid(index, "op", format!("operation {op} is invoked twice"));
                    }
                    open_ops.insert(*op, (&entry.node, call));
                }
                Event::Ok { op, ret, .. } if open_ops.get(op).is_some_and(|(_, call)| !ret.matches_kv_call(call)) => {
                    let (_, call) = open_ops[op];
                    return invalid(index, "ret", format!("operation {op} is a {call:?} call, answered with {ret:?}"));
                }
                Event::Ok { op, .. } | Event::Fail { op, .. } | Event::Info { op, .. } => match open_ops.remove(op) {
                    Some((node, _)) if node == entry.node => {
                        done_ops.insert(*op);
                    }
                    Some((node, _)) => {
                        return invalid(
                            index,
                            "node",
                            format!("operation {op} was invoked by {node}, completed by {}", entry.node),
                        );
                    }
                    None => {
                        return invalid(index, "op", format!("operation {op} completes without an open invocation"));
                    }
                },
                Event::Belief { lock, token, phase, .. } => {
                    let key = (lock.as_str(), entry.node.as_str(), *token);
                    match phase {
                        Phase::Start => {
                            open_beliefs.insert(key);
                        }
                        Phase::End => {
                            if !open_beliefs.remove(&key) {
                                return invalid(
                                    index,
                                    "phase",
                                    format!("a belief in {lock} (token {token}) ends without starting"),
                                );
                            }
                        }
                    }
                }
                Event::LeaseExpiry { latest_ns: Some(latest_ns), .. } if *latest_ns < entry.time_ns => {
                    return invalid(
                        index,
                        "latest_ns",
                        format!("{latest_ns} is before the entry's own time {}", entry.time_ns),
                    );
                }
                Event::Resource { client, token, .. } => {
                    if !known(client) {
                        return invalid(index, "client", format!("{client:?} is not in `nodes`"));
                    }
                    if *token < 0 {
                        return invalid(index, "token", format!("{token} is negative: tokens are revisions"));
                    }
                }
                _ => {}
            }
            if let Err((field, message)) = watches.step(entry) {
                return invalid(index, field, message);
            }
        }
        Ok(())
    }

    /// Pretty JSON with a trailing newline; deterministic (no maps with random order inside).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a history always serializes");
        text.push('\n');
        text
    }

    /// Formats a true time as seconds with millisecond precision, e.g. `12.003s`.
    pub fn fmt_time(time_ns: u64) -> String {
        format!("{}.{:03}s", time_ns / 1_000_000_000, (time_ns / 1_000_000) % 1000)
    }
}

/// The watch streams' part of [`History::validate`]: a stream starts once, on one client, and
/// only that client records its deliveries and its end, between the two.
#[derive(Default)]
struct WatchValidator<'a> {
    /// Stream → (client, ended).
    streams: std::collections::BTreeMap<WatchId, (&'a str, bool)>,
}

impl<'a> WatchValidator<'a> {
    fn step(&mut self, entry: &'a Entry) -> Result<(), (&'static str, String)> {
        let watch = match &entry.event {
            Event::WatchStart { watch, .. } => {
                if self.streams.insert(*watch, (&entry.node, false)).is_some() {
                    return Err(("watch", format!("watch {watch} starts twice")));
                }
                return Ok(());
            }
            Event::WatchEnd { reason: WatchEndReason::Compacted, compact_revision: None, .. } => {
                return Err(("compact_revision", "a watch ended by compaction names the compact revision".into()));
            }
            Event::WatchEvents { watch, .. } | Event::WatchProgress { watch, .. } | Event::WatchEnd { watch, .. } => {
                *watch
            }
            _ => return Ok(()),
        };
        match self.streams.get_mut(&watch) {
            None => Err(("watch", format!("watch {watch} was never started"))),
            Some((_, true)) => Err(("watch", format!("watch {watch} has already ended"))),
            Some((client, _)) if *client != entry.node => {
                Err(("node", format!("watch {watch} belongs to {client}, not {}", entry.node)))
            }
            Some((_, ended)) => {
                *ended = matches!(entry.event, Event::WatchEnd { .. });
                Ok(())
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("line {line}, column {column}: {message}")]
    Json { line: usize, column: usize, message: String },
    #[error("field `schema`: expected {SCHEMA:?}, found {found:?}{}", if found.starts_with("coordsim-summary") { " (this is a run summary; check the history.json next to it)" } else { "" })]
    Schema { found: String },
    #[error("entries[{entry}].{field}: {message}")]
    Invalid { entry: usize, field: String, message: String },
    #[error("{field}: {message}")]
    OutOfRange { field: String, message: String },
}

/// The longest run a history may describe, in ns (10^16 ns, about 115 days): far beyond any
/// simulated or real run, and small enough that checkers may add times and TTLs without overflow.
pub const TIME_MAX_NS: u64 = 10_000_000_000_000_000;

/// The longest TTL or remaining TTL a history may carry, in ms (10^10 ms, about 115 days; etcd
/// accepts up to 9×10^9 s, `MaxLeaseTTL` in server/lease/lessor.go, but no run of ours grants a
/// lease that outlives the longest run), so that `ttl_ms × 10^6` stays within [`TIME_MAX_NS`].
pub const TTL_MAX_MS: u64 = TIME_MAX_NS / 1_000_000;

impl Event {
    /// The TTL-like duration in ms this event carries, and its field's name.
    fn duration_ms(&self) -> Option<(&'static str, u64)> {
        match self {
            Event::Invoke { call: Call::LeaseGrant { ttl_ms }, .. } => Some(("call.ttl_ms", *ttl_ms)),
            Event::Ok { ret: Return::LeaseGranted { ttl_ms, .. } | Return::LeaseKeptAlive { ttl_ms }, .. } => {
                Some(("ret.ttl_ms", *ttl_ms))
            }
            Event::LeaseCheckpoint { remaining_ms, .. } => Some(("remaining_ms", *remaining_ms)),
            _ => None,
        }
    }
}

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
    /// strobe flip), so local time can be computed for any entry.
    Clock { local_ns: i64, rate_ppm: u64 },
    /// A server changed role, as its own Raft metrics say.
    Role { role: RaftRole, term: u64 },
    /// A lease expired: the leader's lessor found it past its deadline (by the leader's local
    /// clock), and its revocation is now committed and applied on that leader (the lease's keys
    /// are deleted). Recorded by that leader.
    LeaseExpiry { lease: i64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Start,
    End,
}

/// The kinds of fault the nemesis injects (see the scenario format for their parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A process pause (GC pause): the node runs no code while time and the network go on.
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
    LeaseRevoke {
        lease: i64,
    },
    /// Acquire the lock `name` under the session lease `lease`.
    Lock {
        name: String,
        lease: i64,
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
        }
    }

    /// Parses a history from JSON and checks its schema.
    pub fn from_json(text: &str) -> Result<History, HistoryError> {
        // A summary.json handed over by mistake deserves a plain answer, not a type error.
        if let Ok(serde_json::Value::Object(fields)) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(serde_json::Value::String(schema)) = fields.get("schema")
            && schema != SCHEMA
        {
            return Err(HistoryError::Schema { found: schema.clone() });
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
        let mut open_ops: std::collections::BTreeMap<OpId, &str> = std::collections::BTreeMap::new();
        let mut done_ops: std::collections::BTreeSet<OpId> = std::collections::BTreeSet::new();
        let mut open_beliefs: std::collections::BTreeSet<(&str, &str, i64)> = std::collections::BTreeSet::new();
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
        for (index, entry) in self.entries.iter().enumerate() {
            match &entry.event {
                Event::Invoke { op, .. } => {
                    if open_ops.contains_key(op) || done_ops.contains(op) {
                        return invalid(index, "op", format!("operation {op} is invoked twice"));
                    }
                    open_ops.insert(*op, &entry.node);
                }
                Event::Ok { op, .. } | Event::Fail { op, .. } | Event::Info { op, .. } => match open_ops.remove(op) {
                    Some(node) if node == entry.node => {
                        done_ops.insert(*op);
                    }
                    Some(node) => {
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

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("line {line}, column {column}: {message}")]
    Json { line: usize, column: usize, message: String },
    #[error("field `schema`: expected {SCHEMA:?}, found {found:?}{}", if found.starts_with("coordsim-summary") { " (this is a run summary; check the history.json next to it)" } else { "" })]
    Schema { found: String },
    #[error("entries[{entry}].{field}: {message}")]
    Invalid { entry: usize, field: String, message: String },
}

//! Faults at fixed times, built in Rust: the scenario format's `[[nemesis]]` entries.

use std::time::Duration;

use coordsim_sim::scenario::{Dur, FaultKindSpec, PartitionShape, ReplyKind, ScheduledFault, SignedDur};

/// One fault: what, whom, when (true time) and for how long.
#[derive(Clone, Debug)]
pub struct Fault(ScheduledFault);

impl Fault {
    fn of(kind: FaultKindSpec) -> Fault {
        Fault(ScheduledFault { kind, duration: Some(Dur(Duration::from_secs(1))), ..ScheduledFault::default() })
    }

    /// A process pause (a GC pause): `target` runs no code while time and the network go on.
    /// `target`: a node (`c1`, `s2`) or `leader`, `follower`, `server`, `client`, `any`.
    pub fn pause(target: &str) -> Fault {
        Fault::of(FaultKindSpec::Pause).target(target)
    }

    /// A crash; at the end of the fault the node restarts (a server with its durable state, a
    /// client running its body again).
    pub fn crash(target: &str) -> Fault {
        Fault::of(FaultKindSpec::Crash).target(target)
    }

    /// `target` cut off from every other node.
    pub fn isolate(target: &str) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::Partition).target(target);
        fault.0.shape = Some(PartitionShape::Isolate);
        fault
    }

    /// The clients `clients` cut off from every server (they still reach the resource).
    pub fn partition_clients(clients: &[&str]) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::Partition);
        fault.0.shape = Some(PartitionShape::Clients);
        fault.0.targets = clients.iter().map(|c| c.to_string()).collect();
        fault
    }

    /// The servers split into a majority and a minority (clients reach both).
    pub fn majority_minority() -> Fault {
        let mut fault = Fault::of(FaultKindSpec::Partition);
        fault.0.shape = Some(PartitionShape::MajorityMinority);
        fault
    }

    /// `target`'s clock jumps by `by_ms` (negative: back), at once.
    pub fn clock_jump(target: &str, by_ms: i64) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::ClockJump).target(target);
        fault.0.duration = None;
        fault.0.by = Some(SignedDur { ns: by_ms * 1_000_000 });
        fault
    }

    /// `target`'s clock runs at `rate` local seconds per true second for the fault's length.
    pub fn clock_rate(target: &str, rate: f64) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::ClockRate).target(target);
        fault.0.rate = Some(rate);
        fault
    }

    /// Replies from the cluster to `target` of one kind are dropped (the requests take effect).
    pub fn drop_replies(target: &str, replies: ReplyKind) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::DropReplies).target(target);
        fault.0.replies = Some(replies);
        fault
    }

    /// Messages are lost with probability `rate` (0..=1).
    pub fn packet_loss(rate: f64) -> Fault {
        let mut fault = Fault::of(FaultKindSpec::PacketLoss);
        fault.0.rate = Some(rate);
        fault
    }

    fn target(mut self, target: &str) -> Fault {
        self.0.target = Some(target.to_string());
        self
    }

    /// When the fault starts (true time since the run began).
    pub fn at(mut self, at: Duration) -> Fault {
        self.0.at = Dur(at);
        self
    }

    /// How long it lasts (default 1 s; a clock jump has no length).
    pub fn lasting(mut self, length: Duration) -> Fault {
        if self.0.duration.is_some() {
            self.0.duration = Some(Dur(length));
        }
        self
    }

    pub(crate) fn into_spec(self) -> ScheduledFault {
        self.0
    }
}

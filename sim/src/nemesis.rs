//! The nemesis: injects the scenario's faults at their scheduled true times and records each
//! fault's start and end. Faults come in paired verbs (pause/resume).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use coordsim_checker::history::{Event, FaultKind, Phase};
use madsim::runtime::Handle;
use madsim::task::NodeId;

use crate::recorder::Recorder;
use crate::scenario::{FaultSpec, ScheduledFault};

/// The name under which the nemesis records its events.
pub const NEMESIS: &str = "nemesis";

/// A fault with its target resolved to a simulator node.
#[derive(Clone, Debug)]
pub struct PlannedFault {
    pub at: Duration,
    pub duration: Duration,
    pub kind: FaultSpec,
    pub target: String,
    pub node: NodeId,
}

/// Resolves target names; every name was validated with the scenario.
pub fn plan(schedule: &[ScheduledFault], nodes: &BTreeMap<String, NodeId>) -> Vec<PlannedFault> {
    schedule
        .iter()
        .map(|fault| PlannedFault {
            at: fault.at.0,
            duration: fault.duration.0,
            kind: fault.kind,
            target: fault.target.clone(),
            node: nodes[&fault.target],
        })
        .collect()
}

/// Runs every fault of the schedule; returns when the last one has ended.
pub async fn run(faults: Vec<PlannedFault>, epoch: Instant, recorder: Recorder) {
    let tasks: Vec<_> = faults
        .into_iter()
        .map(|fault| madsim::task::spawn(inject(fault, epoch, recorder.clone())))
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

async fn inject(fault: PlannedFault, epoch: Instant, recorder: Recorder) {
    madsim::time::sleep_until(epoch + fault.at).await;
    let handle = Handle::current();
    let id = recorder.next_fault_id();
    let kind = match fault.kind {
        FaultSpec::Pause => FaultKind::Pause,
    };
    let targets = vec![fault.target.clone()];
    recorder.record(
        NEMESIS,
        Event::Fault {
            fault: id,
            phase: Phase::Start,
            kind,
            targets: targets.clone(),
        },
    );
    match fault.kind {
        FaultSpec::Pause => handle.pause(fault.node),
    }
    madsim::time::sleep(fault.duration).await;
    match fault.kind {
        FaultSpec::Pause => handle.resume(fault.node),
    }
    recorder.record(
        NEMESIS,
        Event::Fault {
            fault: id,
            phase: Phase::End,
            kind,
            targets,
        },
    );
}

//! Each step of the etcd lock world in the simulator's vocabulary: `lock`/`unlock` operations and
//! the requests inside them, `write token 3 → accepted`, `belief start`/`belief end`, `pause`,
//! `lease_expiry`, `tick`.

use coordsim_core::recipe::EtcdStep;
use coordsim_core::store::KeyRange;

use super::config::EtcdConfig;
use super::state::{End, Phase, State};
use super::{Action, time};
use crate::trace::{TraceStep, client_name};

pub fn step(config: &EtcdConfig, before: &State, action: &Action, after: &State) -> TraceStep {
    match *action {
        Action::Lock(i) => {
            let key = coordsim_core::recipe::mutex::holder_key(super::config::LOCK, before.clients[i].lease);
            let outcome = outcome(after, i, "first in the queue");
            belief(
                TraceStep::new(client_name(i), format!("invoke lock: txn create {key} → {outcome}")),
                before,
                after,
                i,
            )
        }
        Action::Send(i) => send(before, after, i),
        Action::Wake(i) => {
            let Phase::Waiting { key, .. } = &before.clients[i].phase else { unreachable!("wake while waiting") };
            TraceStep::new(client_name(i), format!("watch: {key} deleted → look at the queue again"))
        }
        Action::Write(i) => write(before, after, i),
        Action::Release(i) => {
            let Phase::Holding { key, token, .. } = &before.clients[i].phase else { unreachable!("release holds") };
            let text =
                format!("unlock: delete {key} → ok · belief end (unlocked, token {token}){}", woken(before, after));
            TraceStep::new(client_name(i), text).closing(format!("belief c{}", i + 1))
        }
        Action::Pause(i) => TraceStep::new(client_name(i), "pause (runs no code, sends no keepalive)")
            .opening(format!("pause c{}", i + 1)),
        Action::Resume(i) => TraceStep::new(client_name(i), "resume").closing(format!("pause c{}", i + 1)),
        Action::CutOff(i) => {
            TraceStep::new(client_name(i), "partition: cut off from the servers (the resource still answers)")
                .opening(format!("cut off c{}", i + 1))
        }
        Action::Tick { client_units } => tick(config, before, after, client_units),
    }
}

fn send(before: &State, after: &State, i: usize) -> TraceStep {
    let Phase::Locking { next, mutex } = &before.clients[i].phase else { unreachable!("send while locking") };
    let (request, acquired_because) = match &**next {
        EtcdStep::Range(request) if request.range == KeyRange::Key(mutex.key().to_string()) => {
            (format!("range own key {}", mutex.key()), "present")
        }
        EtcdStep::Range(request) => (
            format!("range predecessor (create_revision ≤ {})", request.max_create_revision),
            "none older, own key not re-read (no session check)",
        ),
        EtcdStep::Txn(_) => ("txn".to_string(), "first in the queue"),
        other => (format!("{other:?}"), "acquired"),
    };
    let outcome = outcome(after, i, acquired_because);
    belief(TraceStep::new(client_name(i), format!("lock: {request} → {outcome}")), before, after, i)
}

/// How a lock request left the client.
fn outcome(after: &State, i: usize, acquired_because: &str) -> String {
    match &after.clients[i].phase {
        Phase::Holding { token, .. } => format!("{acquired_because} → ok lock (token {token}) · belief start"),
        Phase::Locking { next, .. } => match &**next {
            EtcdStep::Range(r) if matches!(r.range, KeyRange::Key(_)) => "none older → re-read own key".to_string(),
            EtcdStep::Range(r) => format!("queued at rev {} → look for the predecessor", r.max_create_revision + 1),
            _ => "→ next request".to_string(),
        },
        Phase::Waiting { key, from, notified, .. } => {
            let already = if *notified { " (already deleted)" } else { "" };
            format!("{key} → watch it for a delete from rev {from}{already}")
        }
        Phase::Done(End::LockFailed) => "fail lock (session expired: our key or lease is gone)".to_string(),
        other => format!("{other:?}"),
    }
}

fn belief(step: TraceStep, before: &State, after: &State, i: usize) -> TraceStep {
    let was = matches!(before.clients[i].phase, Phase::Holding { .. });
    let is = matches!(after.clients[i].phase, Phase::Holding { .. });
    if is && !was { step.opening(format!("belief c{}", i + 1)) } else { step }
}

fn write(before: &State, after: &State, i: usize) -> TraceStep {
    let Phase::Holding { token, .. } = &before.clients[i].phase else { unreachable!("write holds") };
    let text = if after.monitor.stale_write_rejected && !before.monitor.stale_write_rejected
        || matches!(after.clients[i].phase, Phase::Done(End::WriteRejected))
    {
        format!("write token {token} → rejected (fenced) · belief end (write rejected)")
    } else {
        let stale = if after.monitor.stale_grant_accepted && !before.monitor.stale_grant_accepted {
            " ✗ a newer holder's write was already accepted"
        } else {
            ""
        };
        format!("write token {token} → accepted{stale}")
    };
    let step = TraceStep::new(client_name(i), text);
    if matches!(after.clients[i].phase, Phase::Done(_)) { step.closing(format!("belief c{}", i + 1)) } else { step }
}

fn tick(config: &EtcdConfig, before: &State, after: &State, client_units: u8) -> TraceStep {
    let mut events = Vec::new();
    for lease in before.store.leases().map(|l| l.id) {
        if !after.lease_alive(lease) {
            events.push(format!("lease_expiry lease {lease} (its key deleted)"));
        }
    }
    let mut step = TraceStep::new("s1", String::new());
    for (i, (b, a)) in before.clients.iter().zip(&after.clients).enumerate() {
        if b.phase == a.phase {
            continue;
        }
        let why = match a.phase {
            Phase::Done(End::SessionExpired) => "keepalive → lease not found: session expired",
            Phase::Done(End::DeadlinePassed) => "its clock passed its deadline",
            _ => continue,
        };
        let belief_end = if matches!(b.phase, Phase::Holding { .. }) { " · belief end" } else { "" };
        events.push(format!("c{} {why}{belief_end}", i + 1));
        if !belief_end.is_empty() {
            step = step.closing(format!("belief c{}", i + 1));
        }
    }
    let woken = woken(before, after);
    // The clocks that matter: those of clients whose deadline is running.
    let clocks: Vec<String> = match config.client_deadline_units {
        Some(deadline) => (before.clients.iter().zip(&after.clients).enumerate())
            .filter(|(_, (b, _))| time::deadline_running(config, b))
            .map(|(i, (_, a))| {
                let since = a.since_ack_units;
                format!("c{} clock +{client_units}: {since} of {deadline} units since its last ack", i + 1)
            })
            .collect(),
        None => Vec::new(),
    };
    let clocks = if clocks.is_empty() { String::new() } else { format!(" ({})", clocks.join("; ")) };
    let events = if events.is_empty() { String::new() } else { format!(": {}", events.join("; ")) };
    step.text = format!("tick → t={}{clocks}{events}{woken}", after.now);
    step
}

/// `(wakes c2)` when a step's write notified waiters.
fn woken(before: &State, after: &State) -> String {
    let names: Vec<String> = before
        .clients
        .iter()
        .zip(&after.clients)
        .enumerate()
        .filter(|(_, (b, a))| {
            matches!(b.phase, Phase::Waiting { notified: false, .. })
                && matches!(a.phase, Phase::Waiting { notified: true, .. })
        })
        .map(|(i, _)| client_name(i))
        .collect();
    if names.is_empty() { String::new() } else { format!(" (wakes {})", names.join(", ")) }
}

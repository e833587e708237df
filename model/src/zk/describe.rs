//! Each step of the ZooKeeper lock world as ZooKeeper calls it (`create`, `getChildren`,
//! `exists`, `delete`, a watch firing), with the lock's `belief start`/`belief end`.

use super::Action;
use super::state::{Phase, State};
use crate::trace::{TraceStep, client_name};

fn node(seq: u8) -> String {
    format!("/lock/n-{seq:010}")
}

pub fn step(before: &State, action: &Action, after: &State) -> TraceStep {
    let (i, text) = match *action {
        Action::Create(i) => (i, format!("invoke lock: create {} (ephemeral sequential)", node(after.clients[i].seq))),
        Action::List(i) => (i, list(after, i)),
        Action::Exists(i) => (i, exists(before, after, i)),
        Action::Wake(i) => {
            let Phase::Watching { target, .. } = before.clients[i].phase else { unreachable!("wake while watching") };
            (i, format!("watch: {} deleted → list again", node(target)))
        }
        Action::Release(i) => {
            let text = format!(
                "unlock: delete {} → ok · belief end (unlocked){}",
                node(before.clients[i].seq),
                woken(before, after)
            );
            return TraceStep::new(client_name(i), text).closing(format!("belief c{}", i + 1));
        }
        Action::Abandon(i) => {
            (i, format!("session closed: {} deleted, gives up{}", node(before.clients[i].seq), woken(before, after)))
        }
    };
    let step = TraceStep::new(client_name(i), text);
    if after.clients[i].phase == Phase::Holding { step.opening(format!("belief c{}", i + 1)) } else { step }
}

fn list(after: &State, i: usize) -> String {
    match after.clients[i].phase {
        Phase::Holding => "getChildren /lock → ours is the lowest → ok lock · belief start".to_string(),
        Phase::Checking { target } => format!("getChildren /lock → wait for {}", node(target)),
        ref other => format!("getChildren /lock → {other:?}"),
    }
}

fn exists(before: &State, after: &State, i: usize) -> String {
    let Phase::Checking { target } = before.clients[i].phase else { unreachable!("exists while checking") };
    let outcome = match after.clients[i].phase {
        Phase::Watching { .. } => "exists: watch armed, sleep until it fires",
        Phase::Sleeping { .. } => "no node ✗ bug: sleeps as if the watch were armed",
        Phase::Listing { recheck: true } => "no node → list again at once",
        _ => "?",
    };
    format!("exists({}, watch) → {outcome}", node(target))
}

fn woken(before: &State, after: &State) -> String {
    let names: Vec<String> = before
        .clients
        .iter()
        .zip(&after.clients)
        .enumerate()
        .filter(|(_, (b, a))| {
            matches!(b.phase, Phase::Watching { notified: false, .. })
                && matches!(a.phase, Phase::Watching { notified: true, .. })
        })
        .map(|(i, _)| client_name(i))
        .collect();
    if names.is_empty() { String::new() } else { format!(" (wakes {})", names.join(", ")) }
}

//! Each step of the ZooKeeper lock world as ZooKeeper calls it (`create`, `getChildren`,
//! `exists`, `delete`, a watch firing, a session closing), with the lock's `belief start` and
//! `belief end`.

use coordsim_core::recipe::zk_lock::ZkLockStep;
use coordsim_core::zk::{WatchKind, tree};

use super::state::{End, Phase, State};
use super::{Action, LOCK};
use crate::trace::{TraceStep, client_name};

pub fn step(before: &State, action: &Action, after: &State) -> TraceStep {
    let (i, text) = match *action {
        Action::Lock(i) => (i, format!("invoke lock: {}", create(before, after, i, false))),
        Action::LoseCreateReply(i) => {
            let invoke = if before.clients[i].phase == Phase::Idle { "invoke lock: " } else { "lock: " };
            (i, format!("{invoke}{}", create(before, after, i, true)))
        }
        Action::Send(i) => (i, send(before, after, i)),
        Action::Wake(i) => {
            let Phase::Waiting { wait, .. } = &before.clients[i].phase else { unreachable!("wake while waiting") };
            let ZkLockStep::Wait { path, kind, .. } = &**wait else { unreachable!("a wait") };
            let what = match kind {
                WatchKind::Children => format!("children of {path} changed"),
                _ => format!("{path} deleted"),
            };
            (i, format!("watch: {what} → list again"))
        }
        Action::Release(i) => {
            let Phase::Holding { path, token } = &before.clients[i].phase else { unreachable!("release holds") };
            let text =
                format!("unlock: delete {path} → ok · belief end (unlocked, token {token}){}", woken(before, after));
            return TraceStep::new(client_name(i), text).closing(format!("belief c{}", i + 1));
        }
        Action::CloseSession(i) => {
            let node = recipe_node(before, i).unwrap_or("?");
            (i, format!("session closed: {node} deleted, gives up{}", woken(before, after)))
        }
    };
    let step = TraceStep::new(client_name(i), text);
    let holds = |s: &State| matches!(s.clients[i].phase, Phase::Holding { .. });
    if holds(after) && !holds(before) { step.opening(format!("belief c{}", i + 1)) } else { step }
}

/// A create and what came of it.
fn create(before: &State, after: &State, i: usize, lost: bool) -> String {
    let made = new_children(before, after).join(", ");
    let request = "create (ephemeral sequential)";
    if !lost {
        return format!("{request} → {LOCK}/{made} → {}", next(after, i));
    }
    format!("{request} → {LOCK}/{made} applied, reply lost (connection loss) → {}", next(after, i))
}

fn send(before: &State, after: &State, i: usize) -> String {
    let Phase::Requesting { next: request, recipe } = &before.clients[i].phase else { unreachable!("send requests") };
    match &**request {
        ZkLockStep::Create { .. } => create(before, after, i, false),
        ZkLockStep::List { path } => {
            let names = tree::get_children(&before.store, path).unwrap_or_default();
            format!("getChildren {path} → [{}] → {}", names.join(", "), next(after, i))
        }
        ZkLockStep::Exists { path } => {
            let answer = if before.node_exists(path) { "exists" } else { "no node" };
            let bug = match (&after.clients[i].phase, before.node_exists(path)) {
                (Phase::Waiting { .. }, false) => " ✗ bug: sleeps as if the watch could fire",
                _ => "",
            };
            let about = if recipe.node().is_some() { "" } else { " (our tag)" };
            format!("exists({path}, watch){about} → {answer}{bug} → {}", next(after, i))
        }
        ZkLockStep::Delete { path } => format!("delete {path} (an orphan of ours) → {}", next(after, i)),
        other => format!("{other:?}"),
    }
}

/// Where the client stands after a step.
fn next(after: &State, i: usize) -> String {
    match &after.clients[i].phase {
        Phase::Holding { token, .. } => format!("ours is the lowest → ok lock (token {token}) · belief start"),
        Phase::Requesting { next, .. } => match &**next {
            ZkLockStep::Create { .. } => "create again".to_string(),
            ZkLockStep::List { .. } => "list the children".to_string(),
            ZkLockStep::Exists { path } => format!("exists {path}"),
            ZkLockStep::Delete { path } => format!("delete our orphan {path}"),
            other => format!("{other:?}"),
        },
        Phase::Waiting { wait, notified, .. } => {
            let ZkLockStep::Wait { path, kind, .. } = &**wait else { unreachable!("a wait") };
            let already = if *notified { " (already fired)" } else { "" };
            match kind {
                WatchKind::Children => format!("watch the children of {path}, sleep{already}"),
                _ => format!("watch {path}, sleep until it fires{already}"),
            }
        }
        Phase::Done(End::Failed) => "fail lock (our node is gone)".to_string(),
        other => format!("{other:?}"),
    }
}

fn recipe_node(state: &State, i: usize) -> Option<&str> {
    match &state.clients[i].phase {
        Phase::Requesting { recipe, .. } | Phase::Waiting { recipe, .. } => recipe.node(),
        _ => None,
    }
}

/// The children of the lock a step created.
fn new_children(before: &State, after: &State) -> Vec<String> {
    let old = tree::get_children(&before.store, LOCK).unwrap_or_default();
    let new = tree::get_children(&after.store, LOCK).unwrap_or_default();
    new.into_iter().filter(|name| !old.contains(name)).collect()
}

/// The clients whose watch this step fired.
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

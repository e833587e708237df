//! Shortest discoveries. stateright 0.31's breadth-first search does not keep the shortest path
//! to a discovery (a later hit overwrites the stored one) and depth-first never promised one; so
//! after a run we search breadth-first once more, keeping the *first* state that discovers each
//! property: its path is a shortest one. The search stops as soon as every wanted property is
//! found, which for a counterexample is usually early.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use stateright::{Expectation, Model};

/// Gives up past this many states (then the caller keeps stateright's path).
pub const STATES_MAX: usize = 5_000_000;

/// For each wanted property found within `STATES_MAX` states: a shortest path of actions.
pub fn search<M: Model>(model: &M, wanted: &[&'static str]) -> HashMap<&'static str, Vec<M::Action>>
where
    M::State: Hash + Clone,
    M::Action: Clone,
{
    let properties: Vec<_> = model.properties().into_iter().filter(|p| wanted.contains(&p.name)).collect();
    let mut found: HashMap<&'static str, Vec<M::Action>> = HashMap::new();
    // Parent links by fingerprint: state -> (parent, index of the action among its actions).
    let mut parent: HashMap<u64, Option<(u64, usize)>> = HashMap::new();
    let mut queue = VecDeque::new();
    let mut actions = Vec::new();
    for init in model.init_states() {
        let fp = fingerprint(&init);
        if parent.insert(fp, None).is_none() {
            queue.push_back((init, fp));
        }
    }
    while let Some((state, fp)) = queue.pop_front() {
        for property in &properties {
            if found.contains_key(property.name) {
                continue;
            }
            let holds = (property.condition)(model, &state);
            let discovered = match property.expectation {
                Expectation::Always | Expectation::Eventually => !holds,
                Expectation::Sometimes => holds,
            };
            if discovered {
                found.insert(property.name, replay_path(model, &parent, fp));
            }
        }
        if found.len() == properties.len() || parent.len() > STATES_MAX {
            break;
        }
        model.actions(&state, &mut actions);
        for (index, action) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(&state, action) else { continue };
            if !model.within_boundary(&next) {
                continue;
            }
            let next_fp = fingerprint(&next);
            if let std::collections::hash_map::Entry::Vacant(entry) = parent.entry(next_fp) {
                entry.insert(Some((fp, index)));
                queue.push_back((next, next_fp));
            }
        }
    }
    found
}

/// The actions from the initial state to the state `fp`, re-derived by index.
fn replay_path<M: Model>(model: &M, parent: &HashMap<u64, Option<(u64, usize)>>, fp: u64) -> Vec<M::Action>
where
    M::State: Hash + Clone,
    M::Action: Clone,
{
    let mut indices = Vec::new();
    let mut at = fp;
    while let Some(Some((up, index))) = parent.get(&at) {
        indices.push(*index);
        at = *up;
    }
    indices.reverse();
    let mut state =
        model.init_states().into_iter().find(|s| fingerprint(s) == at).expect("the path starts at an init state");
    let mut path = Vec::with_capacity(indices.len());
    let mut actions = Vec::new();
    for index in indices {
        model.actions(&state, &mut actions);
        let action = actions.swap_remove(index);
        actions.clear();
        state = model.next_state(&state, action.clone()).expect("the recorded action applies");
        path.push(action);
    }
    path
}

/// A deterministic 64-bit fingerprint (`DefaultHasher::new()` has fixed keys).
fn fingerprint<T: Hash>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

//! The properties of the etcd lock world, named as the simulator's checkers name them where
//! they mean the same thing. `always` properties read the monitor (set when the bad thing
//! happens) or the current state; `sometimes` properties are interesting states that must be
//! reachable, so that a model that never gets there cannot pass vacuously.

use super::state::{End, Phase, State};
use super::{EtcdLock, time};

/// The condition of the property `name`; `None` for a name this world does not know.
pub fn condition(name: &str) -> Option<fn(&EtcdLock, &State) -> bool> {
    let condition: fn(&EtcdLock, &State) -> bool = match name {
        // always
        "mutual_exclusion" => |_, s| !s.monitor.stale_grant_accepted,
        "fencing" => |_, s| !s.monitor.token_went_back,
        "single_holder" => |_, s| s.holders() <= 1,
        "grant_to_live_session" => |_, s| !s.monitor.granted_to_dead_session,
        "wakeups_per_release" => |_, s| !s.monitor.herd,
        "no_stuck_waiter" => |m, s| !stuck(m, s),
        // sometimes
        "dual_ownership" => |_, s| s.holders() >= 2,
        "lease_expired_while_believed" => {
            |_, s| s.clients.iter().any(|c| matches!(c.phase, Phase::Holding { .. }) && !s.lease_alive(c.lease))
        }
        "waiter_lease_expired" => {
            |_, s| s.clients.iter().any(|c| matches!(c.phase, Phase::Waiting { .. }) && !s.lease_alive(c.lease))
        }
        "contended_release" => |_, s| {
            s.clients
                .iter()
                .any(|c| matches!(&c.phase, Phase::Waiting { notified: true, mutex, .. } if s.key_exists(mutex.key())))
        },
        "stale_write_rejected" => |_, s| s.monitor.stale_write_rejected,
        "deadline_stopped_holder" => |_, s| s.clients.iter().any(|c| c.phase == Phase::Done(End::DeadlinePassed)),
        "all_released" => |_, s| s.clients.iter().all(|c| c.phase == Phase::Done(End::Released)),
        _ => return None,
    };
    Some(condition)
}

/// Liveness as a state: some client is not done, no client can act, and no tick can change
/// anything (no lease left to expire, no deadline running). Nothing will ever happen again, so
/// the waiters wait forever. (stateright's `eventually` is unreliable; this is an `always`.)
pub fn stuck(model: &EtcdLock, state: &State) -> bool {
    !state.all_done() && model.enabled(state).is_empty() && !time::useful(&model.config, state)
}

//! Raft's two timers, kept by the server instead of openraft's tick.
//!
//! openraft 0.10 drives both from one tick that wakes its core every `heartbeat_interval * 13 /
//! 64` ms (`Config::tick_interval`, not configurable): 10 ms at a 50 ms heartbeat, 100 wakes a
//! simulated second on every server, each running the core loop and flushing its metrics, for
//! a check that is almost always "not yet". Here the tick is off (`Config::enable_tick =
//! false`) and each server keeps the two deadlines itself, as etcd's raft does with its
//! `electionElapsed` and `heartbeatElapsed` (raft.go `tickElection`, `tickHeartbeat`):
//!
//! - a leader asks openraft for a heartbeat (`Trigger::heartbeat`) every `heartbeat_ms`;
//! - a voter that is not leading stands for election (`Trigger::elect`, with pre-vote) when
//!   its election timeout passes with no word from a leader and no vote granted. The timeout
//!   is drawn from `election_timeout_min_ms..election_timeout_max_ms` anew at each election it
//!   starts and each change of term or role, as etcd's raft `reset` draws it
//!   (`resetRandomizedElectionTimeout`).
//!
//! Every deadline is on the node's monotonic clock (skewed or stalled as the scenario says),
//! as the tick's `C::now()` is. What openraft's tick did and this does not: it lengthened the
//! timeout by twice `election_timeout_max` after a peer showed a longer log
//! (`smaller_log_timeout`, not visible through openraft's API), so a node with a shorter log
//! now stands at its own timeout and loses its pre-vote, as under etcd's raft. Voters still
//! refuse any vote while their leader lease (`election_timeout_max`) runs: openraft checks that
//! on every vote request, tick or no tick.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;
use madsim::rand::Rng as _;
use openraft::ServerState;
use openraft_rt::WatchReceiver;

use crate::clock::{Clock, LocalTime};
use crate::raft::Raft;
use crate::server::RaftTiming;

/// When this server last heard from a current leader or granted a vote: the instants an
/// election timeout counts from. Written by the RPC handlers, read by [`drive`].
#[derive(Clone, Default)]
pub(super) struct Heard {
    inner: Arc<Mutex<HeardAt>>,
}

#[derive(Default)]
struct HeardAt {
    /// The last AppendEntries (a heartbeat included) accepted from a leader.
    leader: Option<LocalTime>,
    /// The last vote this server granted.
    vote_granted: Option<LocalTime>,
}

impl Heard {
    pub(super) fn leader(&self, now: LocalTime) {
        self.lock().leader = Some(now);
    }

    pub(super) fn vote_granted(&self, now: LocalTime) {
        self.lock().vote_granted = Some(now);
    }

    /// When this server last accepted an AppendEntries from a leader.
    pub(super) fn leader_at(&self) -> Option<LocalTime> {
        self.lock().leader
    }

    fn reset_at(&self) -> Option<LocalTime> {
        let at = self.lock();
        at.leader.max(at.vote_granted)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HeardAt> {
        self.inner.lock().expect("heard lock poisoned")
    }
}

/// Runs the server's heartbeat and election timers until the node stops.
pub(super) async fn drive(raft: Raft, clock: Clock, heard: Heard, timing: RaftTiming) {
    let heartbeat = Duration::from_millis(timing.heartbeat_ms);
    let mut role = raft.server_metrics();
    let mut timeout = draw_election_timeout(&timing);
    // A server starts its election timer when it starts, as a fresh raft node does.
    let mut armed_at = clock.now();
    let mut next_heartbeat: Option<LocalTime> = None;
    loop {
        let leading = role.borrow_watched().state == ServerState::Leader;
        let deadline = if leading {
            // The first heartbeat follows a new leader's blank entry by one interval.
            *next_heartbeat.get_or_insert_with(|| clock.now().plus(heartbeat))
        } else {
            next_heartbeat = None;
            heard.reset_at().map_or(armed_at, |at| at.max(armed_at)).plus(timeout)
        };
        if clock.now() >= deadline {
            if leading {
                // From the later of the deadline and now: a leader that stalled (a pause, a
                // starved CPU) sends one heartbeat when it wakes, not one per interval it slept
                // through, as a ticker that drops ticks does (openraft's own tick skips them too).
                next_heartbeat = Some(deadline.max(clock.now()).plus(heartbeat));
                if raft.trigger().heartbeat().await.is_err() {
                    return;
                }
            } else {
                armed_at = clock.now();
                timeout = draw_election_timeout(&timing);
                if raft.trigger().elect(true).await.is_err() {
                    return;
                }
            }
            continue;
        }
        // Biased: `select!` draws its polling order from an RNG of its own, outside the seed.
        futures::select_biased! {
            () = clock.sleep_until(deadline).fuse() => {}
            changed = role.changed().fuse() => {
                if changed.is_err() {
                    return;
                }
                // A new term or role resets the timeout, as etcd's raft `reset` does.
                timeout = draw_election_timeout(&timing);
            }
        }
    }
}

fn draw_election_timeout(timing: &RaftTiming) -> Duration {
    let ms = madsim::rand::thread_rng().gen_range(timing.election_timeout_min_ms..timing.election_timeout_max_ms);
    Duration::from_millis(ms)
}

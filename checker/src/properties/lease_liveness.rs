//! Lease liveness: a lease whose owner stopped renewing it expires in bounded time
//! (docs/cases/04; the mirror of `lease_safety`, which says it never expires too early).
//!
//! The rule, as the service is designed (sim/core/src/lessor.rs and server.rs, like etcd's lessor):
//! - The leader renews a lease when a keepalive reaches it, so the last renewal is no later than
//!   the completion (`ok` or `info`) of the last keepalive that may have reached it (plus the
//!   history's `renewal_relay_ms`: a ZooKeeper follower answers a ping
//!   before the leader hears of it; a session's other requests renew it too, `session_touch`); a keepalive
//!   that never completed may have reached it until its client crashed (or the run ended); one in
//!   flight while a fault held the servers (see below) may arrive when that fault ends. From
//!   there the lease lives TTL **by the leader's clock** (the `clock` records give it: a slow
//!   leader clock lengthens leases in true time, by design), then the leader's expiry loop notices
//!   within one tick (the history's `lease_expiry_tick_ms`, also by its clock).
//! - **A leader change may lengthen the lease by little.** A new leader continues each lease
//!   from the remaining TTL its predecessor last recorded, plus one election timeout
//!   (`lease_promotion_extend_ms`: etcd's `Promote(electionTimeout)`). What it may have recorded are
//!   the points of the lease: `lease_checkpoint` records, and renewals (a full TTL: a renewal
//!   clears the checkpoint). Which one it applied last is not known exactly — one committed less
//!   than `election_timeout_max_ms` before the promotion may not have reached it — so the
//!   largest among the last point before that and those after it counts, each aged by the time
//!   from it to the new leader's election (the old leader's countdown ran until then) beyond
//!   [`CHECKPOINT_STALENESS_MS`] (what servers that checkpoint every 2 s may lag). This is the
//!   promise a user's lock relies on: a dead holder's lease ends about a TTL after its last
//!   renewal, however often the leader changes. etcd keeps it only with lease
//!   checkpoints on and an interval shorter than the TTL; stock etcd (3.4 to 3.6: checkpoints
//!   off, and a 5-minute interval when on) restarts every lease at its full TTL on each leader
//!   change, so churn keeps a dead client's lease alive and this property fails (docs/cases/04,
//!   etcd issues 9395, 13294, 17132). Promotions are the `lessor_promoted`
//!   records (a leader's lessor takes over once the leader has applied an entry of its own
//!   term, which can be long after its election if a fault holds it back), or the `role leader`
//!   records in a history without them; those up to the bound count (a leader can change while
//!   the revocation is in flight).
//! - The revocation then commits through Raft: [`COMMIT_ALLOWANCE_MS`], plus
//!   `election_timeout_max_ms` for a leader that stalls without being replaced (a pause shorter
//!   than an election), both in true time.
//! - **Liveness is owed only while no fault touches the servers.** While a fault that hits a
//!   server (a partition, a crash, a pause, a link delay, a clock fault: a leader whose clock
//!   jumps back stalls its heartbeats and replication too) or the whole network (packet loss,
//!   latency) is active, the revocation may not commit, a delayed keepalive may still arrive,
//!   and a new election may be on its way: the deadline moves to the end of that fault plus
//!   [`FAULT_RECOVERY_MS`]. Faults that only hit clients do not count.
//!
//! A lease that expires later than that bound, or is still alive past it (at the end of the run,
//! or when its owner revoked it), fails. An expiry observed from outside (a real cluster, polled)
//! is judged by its earliest possible time, the moment after the last answer that showed the lease
//! alive, and a lease with no expiry record only up to the last answer
//! (`History::lease_observation`): late means late for every time the observation allows. Leases revoked by their owner before the bound, and
//! leases alive at the end of the run with a renewal within the bound, pass. A keepalive answered
//! "not found" without an expiry record means the lease is gone, but not since when: not judged.
//! The summary reports the worst delay: how long after its last possible renewal's TTL (in true
//! time) a lease expired.

use std::collections::BTreeMap;

use crate::history::{Event, History, NodeRole, Phase, ServiceTiming};
use crate::properties::clocks::Clocks;
use crate::properties::leaders::{Leadership, Promotion};
use crate::properties::leases::{LeaseRecord, Renewal, crashes, leases};
use crate::verdict::{Finding, PropertyReport, Verdict};

// The service's own timers (expiry tick, election timeout, promotion extension) come from the
// history (`History::service_timing`); the constants below are the property's own margins.

/// How far behind the truth a new leader's view of a lease may be for the promise to hold: what
/// servers that checkpoint every 2 s lag (the interval, a 500 ms checkpoint tick and two
/// commits: a renewal's clearing, then the checkpoint). A property's tolerance, not a service
/// setting: a service that checkpoints less often keeps the promise less well, and fails.
/// A point older than this at the new leader's election counts only for what it would have
/// left by then.
pub const CHECKPOINT_STALENESS_MS: u64 = 2_000 + 500 + 2 * COMMIT_ALLOWANCE_MS;
/// After a fault that may block commits ends, the time Raft gets to resume before the deadline
/// counts again: requests sent during the fault time out and openraft backs off from followers it
/// could not reach (about 1 s in the simulator, measured on chaos-fenced-mutex).
pub const FAULT_RECOVERY_MS: u64 = 1_000;
/// Time for the leader's revocation to commit and apply when no fault slows the network: a few
/// replication round trips of a few milliseconds each, with a wide margin.
pub const COMMIT_ALLOWANCE_MS: u64 = 250;

const MS: u64 = 1_000_000;

/// What the bound of one lease is made of.
struct Bound {
    /// The election timeout's maximum and the commit allowance, past the deadline.
    slack_ns: u64,
    /// The last renewal that may have reached the server, and when at the latest.
    last: Renewal,
    last_ns: u64,
    /// When the leader's lessor should have found the lease past its deadline.
    deadline_ns: u64,
    /// Promotions that lengthened the lease.
    leader_changes: usize,
}

impl Bound {
    /// The latest the lease may expire.
    fn limit_ns(&self) -> u64 {
        self.deadline_ns.saturating_add(self.slack_ns)
    }
}

struct Context<'a> {
    history: &'a History,
    timing: ServiceTiming,
    clocks: Clocks,
    leadership: Leadership,
    crashes: BTreeMap<&'a str, Vec<u64>>,
    /// (start, end) of every fault that may block the revocation's commit.
    blocking: Vec<(u64, u64)>,
}

pub(super) fn check(history: &History) -> PropertyReport {
    let context = Context {
        history,
        timing: history.service_timing(),
        clocks: Clocks::from_history(history),
        leadership: Leadership::from_history(history),
        crashes: crashes(history),
        blocking: blocking_faults(history),
    };
    let leases = leases(history);
    let mut findings = Vec::new();
    let (mut expired, mut revoked, mut alive, mut unrecorded) = (0usize, 0usize, 0usize, 0usize);
    // (delay past the TTL in ms, lease, leader changes) of the latest expiry.
    let mut worst: Option<(u64, i64, usize)> = None;
    for lease in leases.values() {
        let bound = bound(&context, lease);
        let limit_ns = bound.limit_ns();
        match (lease.expired, lease.revoked, lease.gone) {
            (Some((expired_ns, entry)), _, _) => {
                expired += 1;
                let delay_ms = expired_ns.saturating_sub(bound.last_ns + lease.ttl_ms * MS) / MS;
                if worst.is_none_or(|(ms, _, _)| delay_ms > ms) {
                    worst = Some((delay_ms, lease.id, bound.leader_changes));
                }
                if expired_ns > limit_ns {
                    let what = format!("expired at {}", History::fmt_time(expired_ns));
                    findings.push(late(lease, &bound, expired_ns, &what, entry));
                }
            }
            (None, Some((revoked_ns, entry)), _) => {
                revoked += 1;
                if revoked_ns > limit_ns {
                    let what =
                        format!("was still alive when its owner revoked it at {}", History::fmt_time(revoked_ns));
                    findings.push(late(lease, &bound, revoked_ns, &what, entry));
                }
            }
            (None, None, Some(_)) => unrecorded += 1,
            (None, None, None) => {
                alive += 1;
                // Alive as long as it was seen: to the end of the run, or on a cluster observed
                // from outside to the last answer.
                let seen_ns = history.leases_seen_until_ns();
                if seen_ns > limit_ns {
                    let what = match seen_ns < history.duration_ns {
                        false => format!("was still alive at the end of the run ({})", History::fmt_time(seen_ns)),
                        true => format!("was still alive at the last observation ({})", History::fmt_time(seen_ns)),
                    };
                    findings.push(late(lease, &bound, seen_ns, &what, bound.last.entry));
                }
            }
        }
    }
    findings.sort_by_key(|f| (f.time_ns, f.entries.clone()));
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let worst = match worst {
        Some((ms, lease, changes)) => {
            format!(
                "; worst delay {ms} ms past the TTL after the last renewal (lease {lease}, {changes} leader changes)"
            )
        }
        None => String::new(),
    };
    let unrecorded = if unrecorded > 0 {
        format!(", {unrecorded} gone without an expiry record (not judged)")
    } else {
        String::new()
    };
    let summary = match verdict {
        Verdict::Pass if leases.is_empty() => "no leases granted in this history".to_string(),
        Verdict::Pass => format!(
            "{} leases: {expired} expired within their bound, {revoked} revoked by their owner, {alive} alive at the end{unrecorded}{worst}{}",
            leases.len(),
            history.lease_resolution_note()
        ),
        _ => format!(
            "{} leases outlived their bound (TTL by the leader's clock + {} ms tick + {} ms election + {COMMIT_ALLOWANCE_MS} ms commit, extended by each leader change and by faults on the servers + {FAULT_RECOVERY_MS} ms){worst}{}",
            findings.len(),
            context.timing.lease_expiry_tick_ms,
            context.timing.election_timeout_max_ms,
            history.lease_resolution_note()
        ),
    };
    PropertyReport { property: "lease_liveness".into(), verdict, summary, findings }
}

fn late(lease: &LeaseRecord, bound: &Bound, at_ns: u64, what: &str, entry: usize) -> Finding {
    let renewal = if bound.last.acked { "acknowledged" } else { "unacknowledged" };
    Finding {
        time_ns: bound.limit_ns(),
        until_ns: Some(at_ns),
        message: format!(
            "lease {} of {} {what}, {} ms past its bound {}: its last renewal ({renewal}, sent at {}) may have reached the server until {}, TTL {} ms, {} leader changes",
            lease.id,
            lease.owner,
            at_ns.saturating_sub(bound.limit_ns()) / MS,
            History::fmt_time(bound.limit_ns()),
            History::fmt_time(bound.last.invoke_ns),
            History::fmt_time(bound.last_ns),
            lease.ttl_ms,
            bound.leader_changes,
        ),
        entries: vec![bound.last.entry, entry],
    }
}

/// The latest moment a renewal may have reached the server: an acknowledged one, its `ok`;
/// otherwise its completion, else the crash of its client, else the end of the run; or, if a
/// fault on the servers was active meanwhile, the end of that fault and of the faults chained to
/// it (a paused server handles the requests queued for it when it resumes, a delayed link
/// delivers late).
fn latest_ns(context: &Context<'_>, owner: &str, renewal: &Renewal) -> u64 {
    // An acknowledged renewal was made (and checkpointed) before its answer, or, where a
    // follower answers before it tells the leader (ZooKeeper), within the history's
    // `renewal_relay_ms` after it: faults after that cannot move it.
    if let (true, Some(complete_ns)) = (renewal.acked, renewal.complete_ns) {
        return complete_ns + context.timing.renewal_relay_ms * MS;
    }
    let reached_ns = renewal.complete_ns.unwrap_or_else(|| {
        let crashed = context.crashes.get(owner).and_then(|times| times.iter().find(|&&t| t >= renewal.invoke_ns));
        crashed.copied().unwrap_or(context.history.duration_ns)
    });
    let latest_ns = reached_ns + context.timing.renewal_relay_ms * MS;
    // Faults chain: a server paused again before its first pause ended handles the request only
    // when the last of them ends.
    let mut until_ns = latest_ns;
    loop {
        let held_until = context
            .blocking
            .iter()
            .filter(|(start, end)| *start <= until_ns && *end >= renewal.invoke_ns && *end > until_ns)
            .map(|(_, end)| *end)
            .max();
        match held_until {
            Some(end) => until_ns = end,
            None => return until_ns,
        }
    }
}

fn bound(context: &Context<'_>, lease: &LeaseRecord) -> Bound {
    let (last, last_ns) = lease
        .renewals
        .iter()
        .map(|r| (*r, latest_ns(context, &lease.owner, r)))
        .max_by_key(|(r, ns)| (*ns, r.invoke_ns))
        .expect("a lease has its grant among its renewals");
    let ttl_ns = lease.ttl_ms * MS;
    let timing = context.timing;
    let tick_ns = timing.lease_expiry_tick_ms * MS;
    let leaders = context.leadership.leaders_during(last.invoke_ns, last_ns);
    let mut deadline_ns = if leaders.is_empty() {
        last_ns + ttl_ns + tick_ns
    } else {
        // The renewal happened at some moment of its window, on whichever of them led then.
        let fires =
            |leader: &&str| context.clocks.latest_timer_fires_ns(leader, last.invoke_ns, last_ns, ttl_ns + tick_ns);
        leaders.iter().map(fires).max().unwrap_or(0)
    };
    let end_ns = lease.expired.or(lease.revoked).map_or(context.history.duration_ns, |(ns, _)| ns);
    let slack_ns = (timing.election_timeout_max_ms + COMMIT_ALLOWANCE_MS) * MS;
    let mut leader_changes = 0;
    let mut promotions = context.leadership.promotions.iter().filter(|p| p.time_ns > last.invoke_ns).peekable();
    // Each step moves the deadline later; stop when neither a promotion nor a fault does.
    loop {
        let limit_ns = (deadline_ns + slack_ns).min(end_ns);
        if let Some(promotion) = promotions.next_if(|p| p.time_ns <= limit_ns) {
            let remaining_ns = remaining_at(context, lease, promotion) * MS;
            let restarted_ns = context.clocks.timer_fires_ns(
                &promotion.server,
                promotion.time_ns,
                remaining_ns + timing.lease_promotion_extend_ms * MS + tick_ns,
            );
            if restarted_ns > deadline_ns {
                deadline_ns = restarted_ns;
                leader_changes += 1;
            }
            continue;
        }
        let recovery_ns = FAULT_RECOVERY_MS * MS;
        let blocked_until = context
            .blocking
            .iter()
            .filter(|(start, end)| *start <= limit_ns && *end + recovery_ns > deadline_ns)
            .map(|(_, end)| *end + recovery_ns)
            .max();
        match blocked_until {
            Some(ns) => deadline_ns = ns,
            None => break,
        }
    }
    Bound { slack_ns, last, last_ns, deadline_ns, leader_changes }
}

/// (start, end) of every fault that may block a commit or delay a keepalive: those that hit a
/// server, or the whole network (no targets). A fault still active at the end of the run ends
/// with it.
fn blocking_faults(history: &History) -> Vec<(u64, u64)> {
    let is_server = |name: &String| history.nodes.iter().any(|n| n.name == *name && n.role == NodeRole::Server);
    let mut open: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in &history.entries {
        let Event::Fault { fault, phase, targets, .. } = &entry.event else { continue };
        if !(targets.is_empty() || targets.iter().any(is_server)) {
            continue;
        }
        match phase {
            Phase::Start => {
                open.insert(*fault, entry.time_ns);
            }
            Phase::End => {
                if let Some(start) = open.remove(fault) {
                    out.push((start, entry.time_ns));
                }
            }
        }
    }
    out.extend(open.into_values().map(|start| (start, history.duration_ns)));
    out
}

/// The remaining TTL (ms) a leader promoted at `promotion_ns` may continue the lease from: the
/// largest of the last point it surely applied and those it may have applied (see the module
/// documentation), each aged by the time from it to the new leader's election (when the old
/// leader's countdown stopped counting) beyond [`CHECKPOINT_STALENESS_MS`]. Points are
/// `lease_checkpoint` records and renewals (a full TTL: a renewal clears the checkpoint).
fn remaining_at(context: &Context<'_>, lease: &LeaseRecord, promotion: &Promotion) -> u64 {
    let promotion_ns = promotion.time_ns;
    let elected_ns = context.leadership.elected_ns(promotion);
    let renewals = lease.renewals.iter().map(|r| (latest_ns(context, &lease.owner, r), lease.ttl_ms));
    let recorded = lease.checkpoints.iter().map(|(ns, remaining, _)| (*ns, *remaining));
    let points: Vec<(u64, u64)> = renewals.chain(recorded).filter(|(ns, _)| *ns <= promotion_ns).collect();
    let surely_applied_ns = promotion_ns.saturating_sub(context.timing.election_timeout_max_ms * MS);
    let last_applied =
        points.iter().filter(|(ns, _)| *ns <= surely_applied_ns).max_by_key(|(ns, remaining)| (*ns, *remaining));
    let maybe_applied = points.iter().filter(|(ns, _)| *ns > surely_applied_ns);
    let aged = |(ns, remaining): &(u64, u64)| {
        let age_ms = elected_ns.saturating_sub(*ns) / MS;
        remaining.saturating_sub(age_ms.saturating_sub(CHECKPOINT_STALENESS_MS))
    };
    last_applied.into_iter().chain(maybe_applied).map(aged).max().unwrap_or(lease.ttl_ms)
}

//! The story of a run in a few lines, generated from the history: faults, leader changes, lease
//! expiries, grants with their tokens, the writes that matter at the resource, and the
//! violations. E.g. `2.000 s: c1 paused for 10.000 s while holding /locks/resource (token 2)`,
//! `5.551 s: s1 expired lease 1 of c1`, `12.008 s: c1 wrote with token 2 → accepted, although
//! token 6 was accepted before (stale write)`.
//!
//! Long runs would make a long story: key lines (faults, expiries, grants, stale or rejected
//! writes, violations) come first, details fill what is left of [`NARRATIVE_LINES_MAX`], and the
//! rest is counted.

use std::collections::{BTreeMap, BTreeSet};

use coordsim_checker::history::{Call, ConnectionState, Event, History, OpId, Phase, Return};
use coordsim_checker::verdict::Verdict;

use super::from_history::serde_name;
use super::{Line, LineTone, fmt_duration, fmt_seconds};
use crate::summary::RunSummary;

/// Most lines in a narrative.
pub const NARRATIVE_LINES_MAX: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// A property failed here: always told.
    Violation,
    Key,
    Detail,
}

struct Draft {
    rank: Rank,
    line: Line,
}

/// The narrative of a run, and how many lines were left out.
pub fn from_history(history: &History, summary: Option<&RunSummary>) -> (Vec<Line>, usize) {
    let mut story = Story::new(history);
    for (index, entry) in history.entries.iter().enumerate() {
        story.entry(index, entry);
    }
    if let Some(summary) = summary {
        story.findings(summary);
    }
    select(story.drafts)
}

/// Keeps every violation, then key lines, then details, up to the limit; back in time order.
fn select(mut drafts: Vec<Draft>) -> (Vec<Line>, usize) {
    let total = drafts.len();
    // Stable: within a rank, lines keep their time order.
    drafts.sort_by_key(|d| d.rank);
    drafts.truncate(NARRATIVE_LINES_MAX);
    let mut lines: Vec<(u64, usize, Line)> =
        drafts.into_iter().enumerate().map(|(i, d)| (d.line.at, i, d.line)).collect();
    lines.sort_by_key(|(at, i, _)| (*at, *i));
    let kept = lines.len();
    (lines.into_iter().map(|(_, _, l)| l).collect(), total - kept)
}

struct Story<'h> {
    history: &'h History,
    drafts: Vec<Draft>,
    ops: BTreeMap<OpId, (usize, Call)>,
    /// lease → (client, last renewal: grant or keepalive ok).
    leases: BTreeMap<i64, (String, u64)>,
    /// client → locks it believes it holds, with their tokens.
    holding: BTreeMap<String, BTreeSet<(String, i64)>>,
    /// fault → true time it starts and ends (known up front, to say how long a fault lasts).
    fault_starts: BTreeMap<u64, u64>,
    fault_ends: BTreeMap<u64, u64>,
    /// (client, token) pairs whose first accepted write was told.
    told_writes: BTreeSet<(String, i64)>,
    leaders: BTreeMap<String, bool>,
}

impl<'h> Story<'h> {
    fn new(history: &'h History) -> Self {
        let fault_times = |wanted: Phase| -> BTreeMap<u64, u64> {
            history
                .entries
                .iter()
                .filter_map(|e| match &e.event {
                    Event::Fault { fault, phase, .. } if *phase == wanted => Some((*fault, e.time_ns)),
                    _ => None,
                })
                .collect()
        };
        let fault_starts = fault_times(Phase::Start);
        let fault_ends = fault_times(Phase::End);
        Story {
            history,
            drafts: Vec::new(),
            ops: BTreeMap::new(),
            leases: BTreeMap::new(),
            holding: BTreeMap::new(),
            fault_starts,
            fault_ends,
            told_writes: BTreeSet::new(),
            leaders: BTreeMap::new(),
        }
    }

    fn say(&mut self, rank: Rank, tone: LineTone, at: u64, refs: Vec<usize>, text: String) {
        let routine = rank == Rank::Detail;
        self.drafts.push(Draft { rank, line: Line { at, text, refs, tone, routine } });
    }

    fn entry(&mut self, index: usize, entry: &coordsim_checker::history::Entry) {
        let t = entry.time_ns;
        let node = entry.node.as_str();
        match &entry.event {
            Event::Invoke { op, call } => {
                self.ops.insert(*op, (index, call.clone()));
            }
            Event::Ok { op, ret } => {
                let invoke = self.ops.remove(op);
                self.ok(index, t, node, invoke, ret);
            }
            Event::Fail { op, error } | Event::Info { op, error } => {
                let unknown = matches!(entry.event, Event::Info { .. });
                // A touch that failed is a wire request of a call that says so itself.
                if let Some((first, call)) = self.ops.remove(op)
                    && !matches!(call, Call::SessionTouch { .. })
                {
                    self.failed(index, first, t, node, &call, error, unknown);
                }
            }
            Event::Fault { fault, phase, kind, targets, detail, .. } => {
                self.fault(index, t, *fault, *phase, &serde_name(kind), targets, detail)
            }
            Event::Belief { lock, token, phase, reason } => {
                self.belief(index, t, node, lock, *token, *phase, reason.as_deref())
            }
            Event::Resource { client, token, accepted, highest_before, .. } => {
                self.write(index, t, client, *token, *accepted, *highest_before)
            }
            Event::Role { role, term } => {
                let role = serde_name(role);
                let was_leader = self.leaders.get(node).copied().unwrap_or(false);
                let is_leader = role == "leader";
                self.leaders.insert(node.to_string(), is_leader);
                if is_leader && !was_leader {
                    let text = format!("{node} became leader (term {term})");
                    self.say(Rank::Key, LineTone::Plain, t, vec![index], text);
                } else if was_leader && !is_leader {
                    let text = format!("{node} is no longer leader: now {role} (term {term})");
                    self.say(Rank::Key, LineTone::Plain, t, vec![index], text);
                }
            }
            Event::LeaseExpiry { lease, .. } => {
                let text = match self.leases.get(lease) {
                    Some((client, renewed)) => format!(
                        "{node} expired lease {lease} of {client} (last renewed at {}, {} earlier): {client}'s lock keys are deleted",
                        fmt_seconds(*renewed),
                        fmt_duration(t.saturating_sub(*renewed))
                    ),
                    None => format!("{node} expired lease {lease}"),
                };
                self.say(Rank::Key, LineTone::Fault, t, vec![index], text);
            }
            Event::Connection { state, server, reason } => {
                let at = server.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
                let why = reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                let tone = match state {
                    ConnectionState::Suspended | ConnectionState::Lost => LineTone::Fault,
                    _ => LineTone::Plain,
                };
                let rank = match state {
                    ConnectionState::Connected => Rank::Detail,
                    _ => Rank::Key,
                };
                let text = format!("{node}: connection {}{at}{why}", state.curator_name());
                self.say(rank, tone, t, vec![index], text);
            }
            Event::User { name, attrs } => {
                let details: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let text = match details.is_empty() {
                    true => format!("{node}: {name}"),
                    false => format!("{node}: {name} ({})", details.join(", ")),
                };
                self.say(Rank::Detail, LineTone::Plain, t, vec![index], text);
            }
            #[allow(unreachable_patterns)]
            _ => {
                let value = serde_json::to_value(&entry.event).unwrap_or_default();
                let kind = value.get("type").and_then(|v| v.as_str()).unwrap_or("event");
                let text = format!("{node}: {}", kind.replace('_', " "));
                self.say(Rank::Detail, LineTone::Plain, t, vec![index], text);
            }
        }
    }

    fn ok(&mut self, index: usize, t: u64, node: &str, invoke: Option<(usize, Call)>, ret: &Return) {
        let refs: Vec<usize> = invoke.iter().map(|(i, _)| *i).chain([index]).collect();
        match ret {
            Return::LeaseGranted { lease, ttl_ms } => {
                self.leases.insert(*lease, (node.to_string(), t));
                let text = format!("{node} got lease {lease} (TTL {})", fmt_duration(ttl_ms * 1_000_000));
                self.say(Rank::Detail, LineTone::Plain, t, refs, text);
            }
            Return::LeaseKeptAlive { .. } => {
                if let Some((_, Call::LeaseKeepAlive { lease } | Call::SessionTouch { lease, .. })) = &invoke
                    && let Some(entry) = self.leases.get_mut(lease)
                {
                    entry.1 = t;
                }
            }
            Return::Locked { token, .. } => {
                let lock = match &invoke {
                    Some((_, Call::Lock { name, .. })) => name.clone(),
                    _ => "the lock".to_string(),
                };
                let text = format!("{node} acquired {lock} with token {token}");
                self.say(Rank::Key, LineTone::Plain, t, refs, text);
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn failed(&mut self, index: usize, first: usize, t: u64, node: &str, call: &Call, error: &str, unknown: bool) {
        let what = match call {
            Call::LeaseKeepAlive { lease } => format!("keepalive of lease {lease}"),
            Call::Lock { name, .. } => format!("lock of {name}"),
            Call::Write { token, .. } => format!("write with token {token}"),
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.get("f").and_then(|f| f.as_str()).map(|f| f.replace('_', " ")))
                .unwrap_or_else(|| "operation".to_string()),
        };
        let outcome = if unknown { "has an unknown outcome" } else { "failed" };
        let rank =
            if matches!(call, Call::LeaseKeepAlive { .. } | Call::Write { .. }) { Rank::Key } else { Rank::Detail };
        let text = format!("{node}'s {what} {outcome}: {error}");
        self.say(rank, LineTone::Fault, t, vec![first, index], text);
    }

    #[allow(clippy::too_many_arguments)]
    fn fault(&mut self, index: usize, t: u64, fault: u64, phase: Phase, kind: &str, targets: &[String], detail: &str) {
        let who = if targets.is_empty() { "the cluster".to_string() } else { targets.join(", ") };
        let detail = if detail.is_empty() { String::new() } else { format!(" ({detail})") };
        let text = match phase {
            Phase::Start => {
                let lasting = match self.fault_ends.get(&fault) {
                    Some(&end) if end == t => String::new(),
                    Some(end) => format!(" for {}", fmt_duration(end.saturating_sub(t))),
                    None => " until the end".to_string(),
                };
                let holding: Vec<String> = targets
                    .iter()
                    .flat_map(|target| {
                        self.holding
                            .get(target)
                            .into_iter()
                            .flatten()
                            .map(move |(lock, token)| format!("{target} holds {lock} (token {token})"))
                    })
                    .collect();
                let context =
                    if holding.is_empty() { String::new() } else { format!(" while {}", holding.join(" and ")) };
                match kind {
                    "pause" => format!("{who} paused{lasting} (a stop-the-world pause){context}"),
                    "crash" => match self.fault_ends.get(&fault) {
                        Some(end) => format!(
                            "{who} crashed{detail}{context}; it restarts {} later",
                            fmt_duration(end.saturating_sub(t))
                        ),
                        None => format!("{who} crashed{detail}{context} and stays down"),
                    },
                    _ => format!("fault {kind} on {who}{detail}{lasting}{context}"),
                }
            }
            Phase::End if self.fault_ends.get(&fault) == Some(&t) && self.fault_starts.get(&fault) == Some(&t) => {
                return; // an instantaneous fault (a clock jump) was told at its start
            }
            Phase::End => match kind {
                "pause" => format!("{who} resumed"),
                "crash" => format!("{who} restarted"),
                _ => format!("fault {kind} on {who} ended"),
            },
        };
        self.say(Rank::Key, LineTone::Fault, t, vec![index], text);
    }

    #[allow(clippy::too_many_arguments)]
    fn belief(&mut self, index: usize, t: u64, node: &str, lock: &str, token: i64, phase: Phase, reason: Option<&str>) {
        let held = self.holding.entry(node.to_string()).or_default();
        match phase {
            Phase::Start => {
                held.insert((lock.to_string(), token));
            }
            Phase::End => {
                held.remove(&(lock.to_string(), token));
                match reason {
                    Some("unlocked") | None => {
                        let text = format!("{node} released {lock} (token {token})");
                        self.say(Rank::Key, LineTone::Plain, t, vec![index], text);
                    }
                    Some(reason) => {
                        let text = format!("{node} stops believing it holds {lock} (token {token}): {reason}");
                        self.say(Rank::Key, LineTone::Note, t, vec![index], text);
                    }
                }
            }
        }
    }

    fn write(&mut self, index: usize, t: u64, client: &str, token: i64, accepted: bool, highest_before: i64) {
        let refs = vec![index];
        if !accepted {
            let text = format!(
                "{client} wrote with token {token} → rejected (fencing: token {highest_before} was accepted before)"
            );
            self.say(Rank::Key, LineTone::Good, t, refs, text);
        } else if token < highest_before {
            let text = format!(
                "{client} wrote with token {token} → accepted, although token {highest_before} was accepted before (stale write)"
            );
            self.say(Rank::Key, LineTone::Bad, t, refs, text);
        } else if self.told_writes.insert((client.to_string(), token)) {
            let text = format!("{client} wrote with token {token} → accepted");
            self.say(Rank::Detail, LineTone::Plain, t, refs, text);
        }
    }

    fn findings(&mut self, summary: &RunSummary) {
        // An observation over the same interval as a violation says the same thing again.
        let violated: BTreeSet<(u64, Option<u64>)> = summary
            .outcomes
            .iter()
            .filter(|o| o.report.verdict == Verdict::Fail)
            .flat_map(|o| o.report.findings.iter().map(|f| (f.time_ns, f.until_ns)))
            .collect();
        for outcome in &summary.outcomes {
            let failed = outcome.report.verdict == Verdict::Fail;
            for finding in &outcome.report.findings {
                if !failed && violated.contains(&(finding.time_ns, finding.until_ns)) {
                    continue;
                }
                let refs: Vec<usize> =
                    finding.entries.iter().copied().filter(|&i| i < self.history.entries.len()).collect();
                let (rank, tone, text) = if failed {
                    (
                        Rank::Violation,
                        LineTone::Bad,
                        format!("✗ {} violated: {}", outcome.report.property, finding.message),
                    )
                } else {
                    (
                        Rank::Key,
                        LineTone::Note,
                        format!("{}: {}", outcome.report.property.replace('_', " "), finding.message),
                    )
                };
                self.say(rank, tone, finding.time_ns, refs, text);
            }
        }
    }
}

//! Mutual exclusion at the protected resource.
//!
//! A lock is only worth what the resource sees: the rule (docs/cases/01) is that once a write
//! from a newer grant has been accepted, no write from an older grant may be accepted.
//!
//! "Older" is the order in which the lock service made the grants. A client sees its grant
//! somewhere between asking (`invoke`) and learning of it (`ok`), so true time decides only when
//! one lock call ended before the other began: then the first grant is older, whatever its token
//! says, and the rule holds the service to its promise rather than to its own tokens (a service
//! whose tokens run backwards still fails). When the two calls overlap, the replies' order says
//! nothing — a paused waiter reads a grant made seconds ago after its successor read a newer one —
//! and the fencing token, the service's own position of the grant in its log (a revision, a
//! zxid, a term), decides.
//!
//! A lock of the client's own recipe (no `lock` call the service could record) is granted by the
//! holder's `belief start` with its token (`grants.rs`): when such a grant was asked for is not
//! known, so its token alone orders it against another.

use std::collections::BTreeMap;

use crate::history::{Event, History};
use crate::properties::grants::{Grant, GrantSource, grants};
use crate::verdict::{Finding, PropertyReport, Verdict};

pub(super) fn check(history: &History) -> PropertyReport {
    let grants = grants(history);
    // (client, token) identifies a grant; a client never gets the same token twice. The
    // service's grant first, where the client also believed under another lock's name.
    let mut by_holder: BTreeMap<(&str, i64), &Grant> = BTreeMap::new();
    for grant in &grants {
        by_holder.entry((grant.client.as_str(), grant.token)).or_insert(grant);
    }

    // The newest grant whose write was accepted so far, with the entry of that write.
    let mut newest: Option<(&Grant, usize)> = None;
    let mut findings = Vec::new();
    let mut accepted = 0usize;
    for (index, entry) in history.entries.iter().enumerate() {
        let Event::Resource { client, token, accepted: true, resource, .. } = &entry.event else {
            continue;
        };
        accepted += 1;
        let Some(grant) = by_holder.get(&(client.as_str(), *token)).copied() else {
            findings.push(Finding {
                time_ns: entry.time_ns,
                until_ns: None,
                message: format!(
                    "{resource} accepted a write from {client} with token {token}, which no lock grant in the history gave {client} (a lock of your own: record its grant with believe_held(lock, {token}))"
                ),
                entries: vec![index],
            });
            continue;
        };
        match newest {
            Some((current, write)) if is_older(grant, current) => {
                let prior = &history.entries[write];
                findings.push(Finding {
                    time_ns: entry.time_ns,
                    until_ns: None,
                    message: format!(
                        "{resource} accepted a write from {client} ({}) at {}, after it had accepted a write from {} ({}) at {}: two holders wrote",
                        grant.describe(),
                        History::fmt_time(entry.time_ns),
                        current.client,
                        current.describe(),
                        History::fmt_time(prior.time_ns),
                    ),
                    entries: vec![grant.entry, current.entry, write, index],
                });
            }
            Some((current, _)) if !is_older(current, grant) => {}
            _ => newest = Some((grant, index)),
        }
    }
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass => format!("{accepted} accepted writes, ownership only moved forward{}", own_grants(&grants)),
        _ => format!("{} accepted writes from a stale holder", findings.len()),
    };
    PropertyReport { property: "mutual_exclusion".into(), verdict, summary, findings }
}

/// What the summary adds when some grants came from the clients' own recipes.
fn own_grants(grants: &[Grant]) -> String {
    match grants.iter().filter(|g| g.source == GrantSource::Belief).count() {
        0 => String::new(),
        n => format!(" (grants of the clients' own recipes, from their beliefs: {n})"),
    }
}

/// Grant order (see the module documentation): `a` was granted before `b` if its lock call ended
/// before `b`'s began; otherwise, the two calls overlapping, if its token is lower.
fn is_older(a: &Grant, b: &Grant) -> bool {
    if a.granted_ns < b.invoked_ns {
        return true;
    }
    if b.granted_ns < a.invoked_ns {
        return false;
    }
    a.token < b.token
}

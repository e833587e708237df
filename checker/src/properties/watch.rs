//! Watch streams: each stream is an ordered, duplicate-free, gap-free run of the store's change
//! log from its start revision, a revision's changes delivered together, progress notifications
//! never ahead of the changes — or it ends with a compaction error (docs/cases/05: etcd's watch
//! silently skipped the delete at the compaction boundary; etcd's own robustness tests check
//! these guarantees, see etcd's api/v3 watch documentation).
//!
//! The checker cannot see the store's change log, only what the history shows, so the rules are
//! stated against the history. Per stream (a `watch_start` with its deliveries, progress
//! notifications and end), in the order the client received them:
//! 1. **In range, from the start**: every change is to a watched key, at a revision ≥ the start
//!    revision.
//! 2. **Ordered, unique, atomic**: revisions never go down; a (revision, key) pair comes once; a
//!    revision is not split across two responses (all changes of one transaction arrive together).
//! 3. **Progress never runs ahead**: after a progress notification at revision `p`, no change at a
//!    revision ≤ `p` arrives.
//! 4. **Faithful**: a change at the revision of an acknowledged write is that write: same key,
//!    same kind (put or delete), same value when the runner records it.
//! 5. **Gap-free**: every key-value write acknowledged `ok` with its revision, on a watched key, at
//!    a revision from the start up to the highest revision the stream delivered or reported
//!    progress for, was delivered. A stream that ends (cancelled, broken, compacted) owes nothing
//!    above that revision; one ended by compaction owes nothing more at all.
//!
//! Writes whose outcome is unknown have no known revision and are not required; changes made by
//! other means (the lock recipe's keys, lease expiries) are not checked against writes.
//!
//! A stream recorded with `start_revision` 0 asked to start "now" (etcd's `start_revision = 0`)
//! without recording which revision the server started it at (a history from another tool; ours
//! record the created response's header revision + 1). Its start is then unknown but bounded: the
//! server fixed it when it created the stream, before the `watch_start` record, so a write
//! invoked after that record has a revision at or above the start, and so has every revision from
//! the first one the stream delivered. Rule 1's start check is skipped for it, and rule 5 owes it
//! the writes from the lowest revision either bound proves, never one acknowledged before it
//! started (which etcd does not send to a watch from now).

use std::collections::BTreeMap;

use crate::history::{ChangeKind, Event, History, WatchId, WatchedChange};
use crate::properties::kv_ops::{KvOperation, kv_operations};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// One watch stream.
pub(super) struct Stream {
    pub(super) client: String,
    pub(super) key: String,
    pub(super) prefix: bool,
    /// 0: "from now", the revision the server chose not recorded.
    pub(super) start_revision: i64,
    pub(super) start_entry: usize,
    pub(super) start_ns: u64,
    /// Deliveries and progress notifications in the order received: (entry, time, what).
    pub(super) updates: Vec<(usize, u64, Update)>,
}

pub(super) enum Update {
    Changes(Vec<WatchedChange>),
    Progress(i64),
}

impl Stream {
    pub(super) fn watches(&self, key: &str) -> bool {
        if self.prefix { key.starts_with(&self.key) } else { key == self.key }
    }
}

pub(super) fn check(history: &History) -> PropertyReport {
    let streams = streams(history);
    let operations = kv_operations(history);
    // Acknowledged writes by the revision they created.
    let writes: BTreeMap<i64, &KvOperation> =
        operations.iter().filter_map(|op| op.write_revision().map(|revision| (revision, op))).collect();
    let mut findings = Vec::new();
    let mut delivered = 0usize;
    let mut covered = 0usize;
    for (id, stream) in &streams {
        let judged = judge(*id, stream, &writes);
        delivered += judged.delivered;
        covered += judged.covered;
        findings.extend(judged.findings);
    }
    findings.sort_by_key(|f| (f.time_ns, f.entries.clone()));
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if streams.is_empty() => "no watch streams in this history".to_string(),
        Verdict::Pass => format!(
            "{} watch streams delivered {delivered} changes, in order, without duplicates or gaps; {covered} acknowledged writes in their ranges were all delivered",
            streams.len()
        ),
        _ => format!("{} violations of the watch guarantees in {} streams", findings.len(), streams.len()),
    };
    PropertyReport { property: "watch".into(), verdict, summary, findings }
}

pub(super) fn streams(history: &History) -> BTreeMap<WatchId, Stream> {
    let mut streams: BTreeMap<WatchId, Stream> = BTreeMap::new();
    for (index, entry) in history.entries.iter().enumerate() {
        let (watch, update) = match &entry.event {
            Event::WatchStart { watch, key, prefix, start_revision } => {
                let stream = Stream {
                    client: entry.node.clone(),
                    key: key.clone(),
                    prefix: *prefix,
                    start_revision: *start_revision,
                    start_entry: index,
                    start_ns: entry.time_ns,
                    updates: Vec::new(),
                };
                streams.entry(*watch).or_insert(stream);
                continue;
            }
            Event::WatchEvents { watch, events } => (watch, Update::Changes(events.clone())),
            Event::WatchProgress { watch, revision } => (watch, Update::Progress(*revision)),
            _ => continue,
        };
        if let Some(stream) = streams.get_mut(watch) {
            stream.updates.push((index, entry.time_ns, update));
        }
    }
    streams
}

struct Judged {
    findings: Vec<Finding>,
    delivered: usize,
    covered: usize,
}

fn judge(id: WatchId, stream: &Stream, writes: &BTreeMap<i64, &KvOperation>) -> Judged {
    let mut findings = Vec::new();
    let name = format!("watch {id} of {} on {}{}", stream.client, stream.key, if stream.prefix { "*" } else { "" });
    let mut finding = |time_ns: u64, entries: Vec<usize>, message: String| {
        findings.push(Finding { time_ns, until_ns: None, message: format!("{name}: {message}"), entries });
    };
    // (revision, key) → entry that delivered it.
    let mut seen: BTreeMap<(i64, &str), usize> = BTreeMap::new();
    // The highest revision delivered so far, with the entry of its response.
    let mut highest: Option<(i64, usize)> = None;
    let mut progress: Option<(i64, usize)> = None;
    let mut delivered = 0usize;
    for (entry, time_ns, update) in &stream.updates {
        let (entry, time_ns) = (*entry, *time_ns);
        let changes = match update {
            Update::Progress(revision) => {
                if progress.is_none_or(|(p, _)| *revision > p) {
                    progress = Some((*revision, entry));
                }
                continue;
            }
            Update::Changes(changes) => changes,
        };
        let previous_response = highest;
        for change in changes {
            delivered += 1;
            let at = format!("the {} of {} at revision {}", kind_name(change.kind), change.key, change.revision);
            if !stream.watches(&change.key) {
                finding(time_ns, vec![stream.start_entry, entry], format!("delivered {at}, outside the watched range"));
            }
            if stream.start_revision > 0 && change.revision < stream.start_revision {
                let message = format!("delivered {at}, below the start revision {}", stream.start_revision);
                finding(time_ns, vec![stream.start_entry, entry], message);
            }
            if let Some(&earlier) = seen.get(&(change.revision, change.key.as_str())) {
                finding(time_ns, vec![earlier, entry], format!("delivered {at} twice"));
            } else if let Some((top, top_entry)) = highest.filter(|(top, _)| change.revision < *top) {
                finding(time_ns, vec![top_entry, entry], format!("delivered {at} after revision {top}: out of order"));
            } else if let Some((top, top_entry)) = previous_response.filter(|(top, _)| change.revision == *top) {
                let message = format!(
                    "delivered {at} in a later response than another change of revision {top}: a revision split in two"
                );
                finding(time_ns, vec![top_entry, entry], message);
            }
            if let Some((p, progress_entry)) = progress.filter(|(p, _)| change.revision <= *p) {
                let message =
                    format!("delivered {at} after a progress notification at revision {p}: progress ran ahead");
                finding(time_ns, vec![progress_entry, entry], message);
            }
            if let Some(write) = writes.get(&change.revision)
                && let Some(problem) = mismatch(change, write)
            {
                let mut entries = write.entries();
                entries.push(entry);
                finding(
                    time_ns,
                    entries,
                    format!("delivered {at}, but revision {} is {}: {problem}", change.revision, write.describe()),
                );
            }
            seen.entry((change.revision, &change.key)).or_insert(entry);
            if highest.is_none_or(|(top, _)| change.revision > top) {
                highest = Some((change.revision, entry));
            }
        }
    }
    // Gap-free up to the highest revision the stream vouched for.
    let watermark = [highest, progress].into_iter().flatten().max_by_key(|(revision, _)| *revision);
    let mut covered = 0usize;
    if let Some((watermark, watermark_entry)) = watermark {
        let owed_from = match stream.start_revision {
            0 => owed_from_now(stream, writes),
            start => start,
        };
        // A stream may report progress below its start, and one from now may be owed nothing:
        // an empty span then (a range whose start is above its end would panic).
        let end = watermark.saturating_add(1);
        let owed = writes.range(owed_from.min(end)..end).filter(|(_, w)| stream.watches(w.key()));
        for (revision, write) in owed {
            covered += 1;
            if !seen.contains_key(&(*revision, write.key())) {
                let mut entries = vec![stream.start_entry];
                entries.extend(write.entries());
                entries.push(watermark_entry);
                let time_ns = write.ok_ns().unwrap_or(write.invoke_ns);
                let message = format!(
                    "never delivered revision {revision} ({}), though it delivered or reported progress up to revision {watermark}: a gap",
                    write.describe()
                );
                finding(time_ns, entries, message);
            }
        }
    }
    Judged { findings, delivered, covered }
}

/// For a stream from "now" whose start revision was not recorded: the lowest revision it is
/// proved to start at or below (see the module's docs): its first delivered revision, or the
/// revision of a write invoked after the stream was created, whichever is lower; nothing is
/// owed when neither exists.
pub(super) fn owed_from_now(stream: &Stream, writes: &BTreeMap<i64, &KvOperation>) -> i64 {
    let first_delivered = stream.updates.iter().find_map(|(_, _, update)| match update {
        Update::Changes(changes) => changes.iter().map(|c| c.revision).min(),
        Update::Progress(_) => None,
    });
    let written_after = writes.iter().find(|(_, w)| w.invoke_ns > stream.start_ns).map(|(revision, _)| *revision);
    [first_delivered, written_after].into_iter().flatten().min().unwrap_or(i64::MAX)
}

/// How a delivered change differs from the acknowledged write of its revision, if it does.
fn mismatch(change: &WatchedChange, write: &KvOperation) -> Option<String> {
    let written = write.written()?;
    let kind = if written.is_some() { ChangeKind::Put } else { ChangeKind::Delete };
    if change.key != write.key() {
        return Some(format!("another key ({})", write.key()));
    }
    if change.kind != kind {
        return Some(format!("a {}", kind_name(kind)));
    }
    match (&change.value, written) {
        (Some(delivered), Some(value)) if delivered != value => Some(format!("the value {value}, not {delivered}")),
        _ => None,
    }
}

fn kind_name(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Put => "put",
        ChangeKind::Delete => "delete",
    }
}

//! Watch continuity: what one consumer sees across the watch streams it re-creates. A consumer is
//! a client watching one key or prefix; when a stream ends (cancelled, broken, compacted) and the
//! consumer watches again, it must go on from where it had got to: start the new stream at the
//! revision after the last one it saw, or read the range first (a re-list: the state at the
//! read's revision stands for every change up to it) and watch from after that read. A consumer
//! that watches again "from now" or from a later revision has skipped the changes in between and
//! never learns of them: etcd issue 11496's shape, which `watch` cannot see, since it judges each
//! stream alone (etcd's api/v3 docs: a watcher resumes with the revision after the last it
//! received; Kubernetes' reflector re-lists after a compaction).
//!
//! The rule, per consumer: every acknowledged write in its range, at a revision from the first
//! stream's start up to the highest revision any of its streams delivered or reported progress
//! for, was delivered by one of its streams, or lies in a stream's own span (then `watch` judges
//! it), or was covered by a read of the range answered at that revision or later before the
//! consumer started the stream that went on past it. A stream whose start was not recorded
//! (`start_revision` 0, a history from another tool) is judged from its first delivered revision.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Call, Event, History, OpId, Return, Touched};
use crate::properties::kv_ops::kv_operations;
use crate::properties::watch::{Stream, Update, owed_from_now, streams};
use crate::verdict::{Finding, PropertyReport, Verdict};

/// A consumer's streams: (start revision as judged, the highest revision it vouched for, stream).
type Spans<'a> = Vec<(i64, Option<i64>, &'a Stream)>;

pub(super) fn check(history: &History) -> PropertyReport {
    let all = streams(history);
    let operations = kv_operations(history);
    let writes: BTreeMap<i64, &crate::properties::kv_ops::KvOperation> =
        operations.iter().filter_map(|op| op.write_revision().map(|revision| (revision, op))).collect();
    let mut consumers: BTreeMap<(&str, &str, bool), Spans> = BTreeMap::new();
    for stream in all.values() {
        let start = match stream.start_revision {
            0 => owed_from_now(stream, &writes),
            start => start,
        };
        consumers.entry((stream.client.as_str(), stream.key.as_str(), stream.prefix)).or_default().push((
            start,
            watermark(stream),
            stream,
        ));
    }
    let reads = reads(history);
    let mut findings = Vec::new();
    let mut restarts = 0usize;
    for ((client, key, prefix), mut spans) in consumers {
        spans.sort_by_key(|(_, _, stream)| stream.start_entry);
        restarts += spans.len() - 1;
        let Some(top) = spans.iter().filter_map(|(_, w, _)| *w).max() else { continue };
        let first = spans.iter().map(|(start, _, _)| *start).min().unwrap_or(i64::MAX);
        let delivered: BTreeSet<(i64, &str)> = spans
            .iter()
            .flat_map(|(_, _, stream)| stream.updates.iter())
            .flat_map(|(_, _, update)| match update {
                Update::Changes(changes) => changes.iter().map(|c| (c.revision, c.key.as_str())).collect(),
                Update::Progress(_) => Vec::new(),
            })
            .collect();
        let range = Range { key, prefix };
        for (revision, write) in writes.range(first..=top) {
            if !range.covers(write.key()) || delivered.contains(&(*revision, write.key())) {
                continue;
            }
            // Inside a stream's own span: the per-stream `watch` property owes it.
            if spans.iter().any(|(start, w, _)| *start <= *revision && w.is_some_and(|w| *revision <= w)) {
                continue;
            }
            // The first stream that went on past it, and what the consumer had seen before.
            let Some((after_start, _, after)) = spans.iter().find(|(start, _, _)| start > revision) else { continue };
            let relisted = reads.iter().any(|read| {
                read.revision >= *revision && read.answered_ns <= after.start_ns && range.read_by(&read.range)
            });
            if relisted {
                continue;
            }
            let before: Vec<&(i64, Option<i64>, &Stream)> =
                spans.iter().filter(|(_, _, s)| s.start_entry < after.start_entry).collect();
            let seen = before.iter().filter_map(|(_, w, _)| *w).max();
            let mut entries: Vec<usize> = before.iter().map(|(_, _, s)| s.start_entry).collect();
            entries.extend(write.entries());
            entries.push(after.start_entry);
            let time_ns = write.ok_ns().unwrap_or(write.invoke_ns);
            findings.push(Finding {
                time_ns,
                until_ns: Some(after.start_ns),
                message: format!(
                    "{client}'s watch on {key}{} never saw revision {revision} ({}): it had seen up to revision {}, then watched again from revision {after_start} at {} without reading the range in between",
                    if prefix { "*" } else { "" },
                    write.describe(),
                    seen.map_or_else(|| "none".to_string(), |s| s.to_string()),
                    History::fmt_time(after.start_ns),
                ),
                entries,
            });
        }
    }
    findings.sort_by_key(|f| (f.time_ns, f.entries.clone()));
    let verdict = if findings.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let summary = match verdict {
        Verdict::Pass if all.is_empty() => "no watch streams in this history".to_string(),
        Verdict::Pass => format!(
            "{} watch streams, {restarts} of them a consumer's re-created watch: each went on from where its consumer had got to",
            all.len()
        ),
        _ => format!("{} acknowledged writes a consumer skipped between two of its watch streams", findings.len()),
    };
    PropertyReport { property: "watch_continuity".into(), verdict, summary, findings }
}

/// The highest revision a stream delivered or reported progress for.
fn watermark(stream: &Stream) -> Option<i64> {
    stream
        .updates
        .iter()
        .filter_map(|(_, _, update)| match update {
            Update::Changes(changes) => changes.iter().map(|c| c.revision).max(),
            Update::Progress(revision) => Some(*revision),
        })
        .max()
}

struct Range<'a> {
    key: &'a str,
    prefix: bool,
}

impl Range<'_> {
    fn covers(&self, key: &str) -> bool {
        if self.prefix { key.starts_with(self.key) } else { key == self.key }
    }

    /// Whether a read of `read` saw all of this range.
    fn read_by(&self, read: &Touched) -> bool {
        match read {
            Touched::Key(key) => !self.prefix && key == self.key,
            Touched::Prefix(prefix) => self.key.starts_with(prefix.as_str()),
        }
    }
}

/// A read of the latest state of a key or prefix, answered `ok`.
struct Read {
    range: Touched,
    revision: i64,
    answered_ns: u64,
}

fn reads(history: &History) -> Vec<Read> {
    let mut open: BTreeMap<OpId, Vec<Touched>> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in &history.entries {
        match &entry.event {
            Event::Invoke { op, call: Call::Get { key } } => {
                open.insert(*op, vec![Touched::Key(key.clone())]);
            }
            Event::Invoke { op, call: Call::Api { reads, .. } } if !reads.is_empty() => {
                open.insert(*op, reads.clone());
            }
            Event::Ok { op, ret: Return::Got { revision, .. } | Return::Api { revision, .. } } => {
                for range in open.remove(op).unwrap_or_default() {
                    out.push(Read { range, revision: *revision, answered_ns: entry.time_ns });
                }
            }
            _ => {}
        }
    }
    out
}

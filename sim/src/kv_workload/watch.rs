//! The watchers of the key-value workload (etcd API): they follow every change to the keys.

use coordsim_checker::history::{Call, ChangeKind, Event, Return, Touched, WatchEndReason, WatchedChange};

use super::{KEY_PREFIX, KvPlan, OP_BUDGET, WATCH_POLL};
use crate::client::Client;
use crate::recorder::Recorder;
use crate::scenario::WatchStart;
use crate::store::{EventKind, KeyRange, RangeRequest, StoreError};

/// Follows every change to the workload's keys, stream after stream: a stream ends when the
/// server says its next revision was compacted (the watcher re-reads the keys as of the compact
/// revision, the oldest still there, and the next stream starts there: a consumer that goes on
/// from a compaction without reading misses what was compacted, `watch_continuity`) or when no
/// server answers (the next resumes where this one stopped).
pub(super) async fn watch(plan: &KvPlan, client: &Client, recorder: &Recorder) {
    let range = KeyRange::Prefix(KEY_PREFIX.to_string());
    let mut from = match plan.spec.watch_start {
        WatchStart::First => 1i64,
        WatchStart::Now => created_now(client, &range).await,
    };
    loop {
        let watch = recorder.next_watch_id();
        recorder.record(
            &plan.name,
            Event::WatchStart { watch, key: KEY_PREFIX.to_string(), prefix: true, start_revision: from },
        );
        let end = loop {
            match client.watch_once(range.clone(), from, WATCH_POLL).await {
                Ok(Ok(batch)) if batch.events.is_empty() => {
                    if batch.header_revision >= from {
                        recorder.record(&plan.name, Event::WatchProgress { watch, revision: batch.header_revision });
                        from = batch.header_revision + 1;
                    }
                }
                Ok(Ok(batch)) => {
                    let events: Vec<WatchedChange> = batch.events.iter().map(change).collect();
                    from = events.last().map_or(from, |last| last.revision + 1);
                    recorder.record(&plan.name, Event::WatchEvents { watch, events });
                    client.clock().sleep(plan.spec.watch_lag.0).await;
                }
                Ok(Err(StoreError::Compacted { compact_revision, .. })) => {
                    break (WatchEndReason::Compacted, Some(compact_revision));
                }
                Ok(Err(_)) | Err(_) => break (WatchEndReason::Broken, None),
            }
        };
        recorder.record(&plan.name, Event::WatchEnd { watch, reason: end.0, compact_revision: end.1 });
        if let Some(compact_revision) = end.1 {
            from = relist(plan, client, recorder, &range, compact_revision).await;
        }
    }
}

/// Reads the watched keys as of `revision` (retrying at the newer compact revision if the keys
/// were compacted further meanwhile) and returns the revision the read was served at, from which
/// the next stream starts: the read's state stands for every change up to it. Recorded as an
/// `api` read of the prefix, its `revision` the one the state is as of.
async fn relist(plan: &KvPlan, client: &Client, recorder: &Recorder, range: &KeyRange, mut revision: i64) -> i64 {
    loop {
        let op = recorder.invoke(&plan.name, relist_call(revision));
        let mut request = RangeRequest::new(range.clone());
        request.revision = revision;
        match client.range(request, OP_BUDGET).await {
            Ok(Ok(response)) => {
                let detail = format!("{} keys", response.count);
                recorder.ok(&plan.name, op, Return::Api { detail, revision, ephemeral_owner: None });
                return revision;
            }
            Ok(Err(StoreError::Compacted { compact_revision, .. })) => {
                recorder.fail(&plan.name, op, format!("compacted at {compact_revision}"));
                revision = compact_revision;
            }
            Ok(Err(error)) => {
                recorder.fail(&plan.name, op, error.to_string());
                client.clock().sleep(WATCH_POLL).await;
            }
            // A read changes nothing: unanswered, it did not happen as far as the state goes.
            Err(unavailable) => {
                recorder.fail(&plan.name, op, unavailable.to_string());
                client.clock().sleep(WATCH_POLL).await;
            }
        }
    }
}

/// A watcher's re-read of the keys as of `revision`, as the history records it (both worlds).
pub fn relist_call(revision: i64) -> Call {
    Call::Api {
        api: "etcd".into(),
        method: "get".into(),
        detail: format!("{KEY_PREFIX}* at revision {revision}"),
        writes: Vec::new(),
        reads: vec![Touched::Prefix(KEY_PREFIX.to_string())],
    }
}

/// The revision a watch from "now" starts at: a poll from revision 0 that waits for nothing is
/// the stream's creation, answered with the store's current revision in its header (as etcd's
/// created response); the stream starts at the next one. Retried until a server answers.
async fn created_now(client: &Client, range: &KeyRange) -> i64 {
    loop {
        match client.watch_once(range.clone(), 0, std::time::Duration::ZERO).await {
            Ok(Ok(batch)) => return batch.header_revision + 1,
            Ok(Err(_)) | Err(_) => client.clock().sleep(WATCH_POLL).await,
        }
    }
}

fn change(event: &crate::store::Event) -> WatchedChange {
    let kind = match event.kind {
        EventKind::Put => ChangeKind::Put,
        EventKind::Delete => ChangeKind::Delete,
    };
    let value = (kind == ChangeKind::Put).then(|| event.kv.value.clone());
    WatchedChange { revision: event.kv.mod_revision, key: event.kv.key.clone(), kind, value }
}

//! The watchers of the key-value workload on real etcd: the simulator's watcher
//! (sim/src/kv_workload/watch.rs) over etcd's Watch service, recorded as the simulator records
//! it, so `watch` and `watch_continuity` judge real etcd by the same rules.
//!
//! The simulator's watcher long-polls: each poll asks for the changes from the next revision it
//! has not seen, and a watcher that lags behind compaction is told so. On etcd each poll is a
//! watch created at that revision (`start_revision`), read until its first batch of changes or
//! for [`WATCH_POLL`], then cancelled: the watcher's lag happens between polls, where compaction
//! can overtake it, and etcd answers a watch created at a compacted revision with a cancel that
//! carries the compact revision (etcd server/etcdserver/api/v3rpc/watch.go, `CompactRevision`;
//! its watch at exactly the compact revision is the path of etcd issues 18089 and 19179). One
//! long stream read slowly would not do: etcd pushes a synced watcher's changes into the
//! connection at once, and the lag would sit in the client's buffer, out of compaction's reach.
//!
//! No progress notifications are recorded: etcd 3.4 answers a progress request with its current
//! revision whether or not the watcher has caught up (etcd issue 15220, fixed in 3.4.24 and
//! 3.5.8), which would fail rule 3 of `watch` on a server doing what its release does. The
//! gap-free rule then covers every revision up to the highest one a stream delivered.

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{ChangeKind, Event, Return, WatchEndReason, WatchedChange};
use coordsim_sim::kv_workload::{KEY_PREFIX, relist_call};
use coordsim_sim::scenario::{KvSpec, WatchStart};
use etcd_client as etcd;

use super::OP_BUDGET;
use crate::journal::Journal;

/// How long one poll waits for changes (the simulator's `WATCH_POLL`).
const WATCH_POLL: Duration = Duration::from_millis(500);

/// What one poll found.
enum Poll {
    /// Changes from the poll's revision, in one response.
    Changes(Vec<WatchedChange>),
    /// No change within the poll: ask again from the same revision.
    Quiet,
    /// etcd cancelled the watch: the revision asked for is compacted (its compact revision).
    Compacted(i64),
    /// No member answered, or the stream broke.
    Broken,
}

/// Follows every change to the workload's keys, stream after stream, until the process stops.
pub(super) async fn watch(name: &str, spec: &KvSpec, client: etcd::Client, journal: Arc<Journal>) {
    let mut from = match spec.watch_start {
        WatchStart::First => 1,
        WatchStart::Now => created_now(&client).await,
    };
    loop {
        let watch = journal.next_watch_id();
        journal
            .record(name, Event::WatchStart { watch, key: KEY_PREFIX.to_string(), prefix: true, start_revision: from });
        let end = loop {
            match poll(&client, from).await {
                Poll::Changes(events) => {
                    from = events.last().map_or(from, |last| last.revision + 1);
                    journal.record(name, Event::WatchEvents { watch, events });
                    tokio::time::sleep(spec.watch_lag.0).await;
                }
                Poll::Quiet => {}
                Poll::Compacted(compact_revision) => break (WatchEndReason::Compacted, Some(compact_revision)),
                Poll::Broken => break (WatchEndReason::Broken, None),
            }
        };
        journal.record(name, Event::WatchEnd { watch, reason: end.0, compact_revision: end.1 });
        match end.1 {
            Some(compact_revision) => from = relist(name, &client, &journal, compact_revision).await,
            None => tokio::time::sleep(WATCH_POLL).await,
        }
    }
}

/// One poll: a watch of the prefix created at `from`, read until its first changes, a
/// compaction cancel, a broken stream or [`WATCH_POLL`], and dropped (the stream with it).
async fn poll(client: &etcd::Client, from: i64) -> Poll {
    let options = etcd::WatchOptions::new().with_prefix().with_start_revision(from);
    let read = async {
        let mut stream = client.clone().watch(KEY_PREFIX, Some(options)).await?;
        while let Some(response) = stream.message().await? {
            if response.canceled() {
                return Ok(match response.compact_revision() {
                    0 => Poll::Broken,
                    compact_revision => Poll::Compacted(compact_revision),
                });
            }
            if !response.events().is_empty() {
                return Ok(Poll::Changes(response.events().iter().filter_map(change).collect()));
            }
        }
        Ok::<_, etcd::Error>(Poll::Broken)
    };
    match tokio::time::timeout(WATCH_POLL, read).await {
        Ok(Ok(found)) => found,
        Ok(Err(_)) => Poll::Broken,
        Err(_) => Poll::Quiet,
    }
}

fn change(event: &etcd::Event) -> Option<WatchedChange> {
    let kv = event.kv()?;
    let kind = match event.event_type() {
        etcd::EventType::Put => ChangeKind::Put,
        etcd::EventType::Delete => ChangeKind::Delete,
    };
    let value = (kind == ChangeKind::Put).then(|| String::from_utf8_lossy(kv.value()).into_owned());
    Some(WatchedChange {
        revision: kv.mod_revision(),
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        kind,
        value,
    })
}

/// Reads the watched keys as of `revision` and returns it: the next stream starts there, the
/// read's state standing for every change up to it. A revision compacted meanwhile is retried at
/// the newer compact revision, which a watch from revision 1 reports (a range says only
/// "compacted"). Recorded as an `api` read of the prefix, as in the simulator.
async fn relist(name: &str, client: &etcd::Client, journal: &Journal, mut revision: i64) -> i64 {
    loop {
        let op = journal.invoke(name, relist_call(revision));
        let options = etcd::GetOptions::new().with_prefix().with_revision(revision);
        match tokio::time::timeout(OP_BUDGET, client.clone().get(KEY_PREFIX, Some(options))).await {
            Ok(Ok(response)) => {
                let detail = format!("{} keys", response.count());
                journal.ok(name, op, Return::Api { detail, revision, ephemeral_owner: None });
                return revision;
            }
            Ok(Err(etcd::Error::GRpcStatus(status))) if status.message().contains("compacted") => {
                journal.fail(name, op, status.message().to_string());
                if let Poll::Compacted(newer) = poll(client, 1).await {
                    revision = newer;
                }
            }
            // A read changes nothing: unanswered or refused, it did not happen.
            Ok(Err(error)) => {
                journal.fail(name, op, error.to_string());
                tokio::time::sleep(WATCH_POLL).await;
            }
            Err(_) => {
                journal.fail(name, op, format!("no answer within {} ms", OP_BUDGET.as_millis()));
                tokio::time::sleep(WATCH_POLL).await;
            }
        }
    }
}

/// The revision a watch from "now" starts at: the created response's header revision + 1, as
/// the simulator's watcher records it. Retried until a member answers.
async fn created_now(client: &etcd::Client) -> i64 {
    loop {
        let created = async {
            let mut stream = client.clone().watch(KEY_PREFIX, Some(etcd::WatchOptions::new().with_prefix())).await?;
            let response = stream.message().await?;
            Ok::<_, etcd::Error>(response.and_then(|r| r.header().map(|h| h.revision() + 1)))
        };
        if let Ok(Ok(Some(revision))) = tokio::time::timeout(OP_BUDGET, created).await {
            return revision;
        }
        tokio::time::sleep(WATCH_POLL).await;
    }
}

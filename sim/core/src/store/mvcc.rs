//! Multi-version history of every key: the changes each key went through, so that a read at
//! a past revision and a watch from a past revision see exactly what was there.
//!
//! etcd keeps a B-tree of keys, each with "generations" of revisions, plus the values in
//! bbolt keyed by revision. Here: per key, the list of its changes in revision order, each
//! holding the key-value it produced (or a tombstone); plus a log of which key changed, in
//! the order the changes were made. Reads go through the keys, watches through the log.
//!
//! Retention after `compact(c)` (see [`KeySpace::compact`]): every change at revision `>= c`,
//! plus, per key, the newest change below `c` when it is a put. That one extra put is what a
//! read at `c` needs when the key did not change at `c`, and what the `prev_kv` of a change at
//! exactly `c` needs. Tombstones below `c` carry nothing a reader at `>= c` can observe. The
//! log keeps exactly the changes at `>= c`: a watch may not start below `c`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::key_range::select;
use super::{Event, EventKind, KeyRange, KeyValue, Revision};

/// One change of one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Change {
    /// The revision of the write request that made the change.
    pub revision: Revision,
    /// The key-value after the change; `None` is a tombstone (the key was deleted).
    pub kv: Option<KeyValue>,
}

/// One entry of the change log: `key` changed at `revision`. Entries of one revision are in
/// the order the changes were applied (etcd's `revision.sub`): a transaction or a lease
/// revoke changes several keys in one revision, and watchers see them in that order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Logged {
    pub revision: Revision,
    pub key: String,
}

/// Every retained change of one key, in increasing revision order. A key changes at most
/// once per revision: a transaction that writes one key twice is rejected up front.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct KeyHistory {
    pub changes: Vec<Change>,
}

impl KeyHistory {
    /// The key-value as of `revision` (`None`: absent or deleted then).
    pub fn at(&self, revision: Revision) -> Option<&KeyValue> {
        let newer = self.changes.partition_point(|c| c.revision <= revision);
        self.changes[..newer].last().and_then(|c| c.kv.as_ref())
    }

    /// The key-value after the newest change, which may belong to a write in progress.
    pub fn latest(&self) -> Option<&KeyValue> {
        self.changes.last().and_then(|c| c.kv.as_ref())
    }

    /// The position of the change made at exactly `revision`.
    pub fn position(&self, revision: Revision) -> Option<usize> {
        self.changes.binary_search_by_key(&revision, |c| c.revision).ok()
    }
}

/// The key space: each key's history, by key, and the log of changes in the order made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct KeySpace {
    keys: BTreeMap<String, KeyHistory>,
    log: Vec<Logged>,
}

impl KeySpace {
    pub fn histories(&self) -> impl Iterator<Item = (&String, &KeyHistory)> {
        self.keys.iter()
    }

    pub fn history(&self, key: &str) -> Option<&KeyHistory> {
        self.keys.get(key)
    }

    pub fn log(&self) -> &[Logged] {
        &self.log
    }

    /// The key-value of `key` after its newest change.
    pub fn latest(&self, key: &str) -> Option<&KeyValue> {
        self.keys.get(key).and_then(KeyHistory::latest)
    }

    /// The live key-values `range` selects as of `revision`, in key order. Visits each key
    /// in the range once (a binary search in its history), never the whole history.
    /// Deleted keys whose tombstone is not yet compacted are visited and skipped.
    pub fn range_at<'a>(&'a self, range: &'a KeyRange, revision: Revision) -> impl Iterator<Item = &'a KeyValue> + 'a {
        select(&self.keys, range).filter_map(move |(_, history)| history.at(revision))
    }

    /// Append a change to `key`'s history and to the log. The caller guarantees no change
    /// of a later revision was recorded before, and at most one change per key per revision;
    /// checked here because a reordered history would make every later read silently wrong.
    pub fn record(&mut self, key: &str, change: Change) {
        let history = match self.keys.get_mut(key) {
            Some(history) => history,
            None => self.keys.entry(key.to_owned()).or_default(),
        };
        if let Some(last) = history.changes.last() {
            assert!(
                last.revision < change.revision,
                "key {key:?} changed at revision {} after a change at revision {}",
                change.revision,
                last.revision
            );
        }
        if let Some(last) = self.log.last() {
            assert!(
                last.revision <= change.revision,
                "change at revision {} logged after one at revision {}",
                change.revision,
                last.revision
            );
        }
        self.log.push(Logged { revision: change.revision, key: key.to_owned() });
        history.changes.push(change);
    }

    /// Drop the history that no read or watch at `>= revision` can observe (see the module
    /// docs for what is kept). Walks every key once, like etcd's compaction.
    pub fn compact(&mut self, revision: Revision) {
        self.keys.retain(|_, history| {
            let first_kept = history.changes.partition_point(|c| c.revision < revision);
            let keeps_put_below = first_kept > 0 && history.changes[first_kept - 1].kv.is_some();
            let drop = if keeps_put_below { first_kept - 1 } else { first_kept };
            history.changes.drain(..drop);
            !history.changes.is_empty()
        });
        let first_kept = self.log.partition_point(|l| l.revision < revision);
        self.log.drain(..first_kept);
    }

    /// Every change to a key in `range` at revision `>= from`, as watch events in the order
    /// the changes were made. Cost: a binary search in the log, then per change since `from`
    /// a range test and a binary search in its key's history, like etcd's catch-up of an
    /// unsynced watcher. A long-poll from the next revision so costs next to nothing.
    /// The caller checks `from` against the compact revision.
    pub fn events(&self, range: &KeyRange, from: Revision, prev_kv: bool) -> Vec<Event> {
        let first = self.log.partition_point(|l| l.revision < from);
        let watched = self.log[first..].iter().filter(|l| range.contains(&l.key));
        watched.map(|l| self.event(l, prev_kv)).collect()
    }

    fn event(&self, logged: &Logged, prev_kv: bool) -> Event {
        let history = &self.keys[&logged.key];
        let position = history.position(logged.revision).expect("a logged change is in its key's history");
        // The previous change in the history is the state at `revision - 1`: nothing in
        // between touched the key. Retention keeps it whenever it was a put.
        let prev = match (prev_kv, position) {
            (false, _) | (true, 0) => None,
            (true, _) => history.changes[position - 1].kv.clone(),
        };
        event_of(&logged.key, &history.changes[position], prev)
    }
}

/// The watch event for one change. A delete carries a bare key-value (empty value, version,
/// create_revision and lease 0, mod_revision = the deleting revision), as etcd's watch does.
fn event_of(key: &str, change: &Change, prev_kv: Option<KeyValue>) -> Event {
    match &change.kv {
        Some(kv) => Event { kind: EventKind::Put, kv: kv.clone(), prev_kv },
        None => Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                key: key.to_owned(),
                value: String::new(),
                create_revision: 0,
                mod_revision: change.revision,
                version: 0,
                lease: 0,
            },
            prev_kv,
        },
    }
}

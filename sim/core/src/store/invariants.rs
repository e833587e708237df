//! Assertions over the store's state. A broken invariant means every later answer may be
//! wrong, so it stops the run loudly, naming the key, lease or revision that broke it.
//!
//! After every write `apply` checks what the write touched (cheap: O(touched keys · log n));
//! debug builds then walk the whole state with [`Store::check_invariants`].

use std::collections::BTreeSet;

use super::mvcc::KeyHistory;
use super::{KeyValue, LeaseId, Revision, Store};

impl Store {
    /// Walk the whole state and panic on the first broken invariant.
    pub fn check_invariants(&self) {
        self.check_revisions();
        for (key, history) in self.kv.histories() {
            self.check_history(key, history);
        }
        self.check_log();
        self.check_key_leases();
        self.check_lease_keys();
    }

    /// After a write: the revision moved by 0 or 1, and each touched key is consistent.
    pub(super) fn check_write(&self, before: Revision, touched: &[(String, LeaseId)]) {
        assert!(self.revision() >= before, "revision went back from {before} to {}", self.revision());
        assert!(self.revision() <= before + 1, "one write moved the revision from {before} to {}", self.revision());
        self.check_revisions();
        for (key, prev_lease) in touched {
            self.check_touched_key(key, *prev_lease);
        }
        #[cfg(debug_assertions)]
        self.check_invariants();
    }

    pub(super) fn check_lease_granted(&self, id: LeaseId) {
        let lease = self.lease(id).expect("granted lease exists");
        assert!(lease.keys.is_empty(), "new lease {id} already holds keys");
        #[cfg(debug_assertions)]
        self.check_invariants();
    }

    pub(super) fn check_lease_revoked(&self, id: LeaseId) {
        assert!(self.lease(id).is_none(), "revoked lease {id} still exists");
    }

    pub(super) fn check_compacted(&self) {
        self.check_revisions();
        #[cfg(debug_assertions)]
        self.check_invariants();
    }

    fn check_revisions(&self) {
        assert!(self.revision() >= 1, "revision {} below the initial revision 1", self.revision());
        assert!(self.compact_revision() >= 0, "negative compact revision {}", self.compact_revision());
        assert!(
            self.compact_revision() <= self.revision(),
            "compact revision {} above the current revision {}",
            self.compact_revision(),
            self.revision()
        );
    }

    /// A touched key's newest state is well formed, and its lease links hold both ways.
    fn check_touched_key(&self, key: &str, prev_lease: LeaseId) {
        let latest = self.kv.latest(key);
        if let Some(kv) = latest {
            check_kv(key, kv, self.revision());
        }
        let lease = latest.map_or(0, |kv| kv.lease);
        if lease != 0 {
            self.check_lease_holds(lease, key);
        }
        if prev_lease != lease {
            let still_held = self.lease(prev_lease).is_some_and(|l| l.keys.contains(key));
            assert!(!still_held, "key {key:?} left lease {prev_lease} but the lease still lists it");
        }
    }

    fn check_lease_holds(&self, lease: LeaseId, key: &str) {
        let Some(held) = self.lease(lease) else {
            panic!("key {key:?} is attached to lease {lease}, which does not exist");
        };
        assert!(held.keys.contains(key), "key {key:?} is attached to lease {lease}, which does not list it");
    }

    /// One key's history: ordered, within the store's revisions, each entry well formed,
    /// versions and create revisions continuous, and nothing below the compact revision but
    /// the one put reads at the compact revision may need.
    fn check_history(&self, key: &str, history: &KeyHistory) {
        let changes = &history.changes;
        assert!(!changes.is_empty(), "key {key:?} has an empty history");
        assert!(changes[0].kv.is_some(), "key {key:?}: the oldest retained change is a tombstone");
        for (index, change) in changes.iter().enumerate() {
            assert!(
                change.revision <= self.revision(),
                "key {key:?} changed at revision {} after the current revision {}",
                change.revision,
                self.revision()
            );
            if index > 0 {
                assert!(
                    change.revision >= self.compact_revision(),
                    "key {key:?} keeps a second change below the compact revision {}: {}",
                    self.compact_revision(),
                    change.revision
                );
            }
            let Some(kv) = &change.kv else { continue };
            check_kv(key, kv, self.revision());
            assert_eq!(
                kv.mod_revision, change.revision,
                "key {key:?}: mod_revision differs from the revision of its change"
            );
        }
        for pair in changes.windows(2) {
            let (older, newer) = (&pair[0], &pair[1]);
            assert!(
                older.revision < newer.revision,
                "key {key:?}: change at revision {} follows one at {}",
                newer.revision,
                older.revision
            );
            match (&older.kv, &newer.kv) {
                (None, None) => panic!(
                    "key {key:?}: two tombstones in a row at revisions {} and {}",
                    older.revision, newer.revision
                ),
                (Some(older), Some(newer)) => {
                    assert_eq!(
                        newer.create_revision, older.create_revision,
                        "key {key:?}: an update changed create_revision"
                    );
                    assert_eq!(
                        newer.version,
                        older.version + 1,
                        "key {key:?}: an update did not add exactly 1 to the version"
                    );
                }
                (None, Some(created)) => check_created(key, created),
                (Some(_), None) => {}
            }
        }
        let first = &changes[0];
        if let (Some(kv), true) = (&first.kv, first.revision >= self.compact_revision()) {
            // Its predecessor, if any, was a tombstone that compaction dropped.
            check_created(key, kv);
        }
    }

    /// The log lists exactly the changes at or above the compact revision, in revision
    /// order, each key at most once per revision, and every revision a write made since the
    /// compact revision: a gap here is a lost watch event.
    fn check_log(&self) {
        let compact = self.compact_revision();
        let log = self.kv.log();
        let mut next = compact.max(2);
        let mut keys_of_revision: BTreeSet<&str> = BTreeSet::new();
        for (index, logged) in log.iter().enumerate() {
            let (revision, key) = (logged.revision, logged.key.as_str());
            let starts_revision = index == 0 || log[index - 1].revision != revision;
            if starts_revision {
                assert!(
                    revision >= next,
                    "log out of order or below the compact revision {compact}: revision \
                     {revision} where {next} or later was due"
                );
                assert!(revision <= next, "revision {next} has no changes left: its events are lost");
                next += 1;
                keys_of_revision.clear();
            }
            assert!(keys_of_revision.insert(key), "key {key:?} logged twice at revision {revision}");
            let found = self.kv.history(key).and_then(|h| h.position(revision));
            assert!(found.is_some(), "logged change of {key:?} at revision {revision} is missing from its history");
        }
        assert!(next > self.revision(), "revision {next} has no changes left: its events are lost");
        let retained: usize =
            self.kv.histories().map(|(_, h)| h.changes.iter().filter(|c| c.revision >= compact).count()).sum();
        assert_eq!(
            log.len(),
            retained,
            "the log and the key histories disagree on the changes since revision {compact}"
        );
    }

    /// Every live key attached to a lease is listed by that lease.
    fn check_key_leases(&self) {
        for (key, history) in self.kv.histories() {
            let Some(kv) = history.latest() else { continue };
            if kv.lease != 0 {
                self.check_lease_holds(kv.lease, key);
            }
        }
    }

    /// Every key a lease lists is live and attached to that lease.
    fn check_lease_keys(&self) {
        assert!(self.leases.next_id() >= 1, "next lease ID {} is not positive", self.leases.next_id());
        for lease in self.leases() {
            let id = lease.id;
            assert!(id != 0, "lease with the reserved ID 0");
            assert!(lease.ttl_ms > 0, "lease {id} has TTL 0");
            for key in &lease.keys {
                let Some(kv) = self.kv.latest(key) else {
                    panic!("lease {id} lists key {key:?}, which is not live");
                };
                assert_eq!(kv.lease, id, "lease {id} lists key {key:?}, which is attached to another lease");
            }
        }
    }
}

/// A stored key-value is internally consistent.
fn check_kv(key: &str, kv: &KeyValue, revision: Revision) {
    assert_eq!(kv.key, key, "history of key {key:?} holds another key");
    assert!(
        kv.mod_revision <= revision,
        "key {key:?}: mod_revision {} above the current revision {revision}",
        kv.mod_revision
    );
    assert!(
        kv.create_revision <= kv.mod_revision,
        "key {key:?}: create_revision {} above mod_revision {}",
        kv.create_revision,
        kv.mod_revision
    );
    assert!(kv.create_revision >= 2, "key {key:?}: create_revision {} before the first write", kv.create_revision);
    assert!(kv.version >= 1, "key {key:?}: live with version {}", kv.version);
}

/// A put that starts a generation: version 1, created by this very put.
fn check_created(key: &str, kv: &KeyValue) {
    assert_eq!(kv.version, 1, "key {key:?}: a creating put has version != 1");
    assert_eq!(kv.create_revision, kv.mod_revision, "key {key:?}: a creating put has create_revision != mod_revision");
}

//! One Redis server's keyspace, as far as the Redlock recipe uses it: `SET key value NX PX ttl`,
//! the compare-and-delete script that releases a lock, and what survives a restart. Sans-IO: the
//! caller passes the server's wall-clock reading with every call.
//!
//! Rules, from Redis's own code and docs:
//! - A key's expiry is an absolute Unix time in ms, `mstime() + ttl` when it is set
//!   (`setGenericCommand` in t_string.c), and a key is gone once `mstime()` passes it
//!   (`keyIsExpired` in db.c): the server's wall clock, so a jump of that clock expires keys early
//!   (redis/redis#416; Kleppmann, "How to do distributed locking", 2016).
//! - Expired keys are removed lazily, on access, and by a periodic sample; to a client the two are
//!   one rule: an expired key does not exist.
//! - Persistence: with `appendonly yes` and `appendfsync always` every write is on disk before its
//!   reply ([`Persistence::AofAlways`]); the default configuration has no AOF and snapshots the
//!   dataset (RDB) after 3600 s with one change, 300 s with 100 or 60 s with 10,000 (redis.conf
//!   since 6.2; `serverCron` tests `dirty >= changes && unixtime - lastsave > seconds`), so a
//!   restart loses every write since the last snapshot ([`Persistence::RdbDefault`]).
//!   Restored keys keep their absolute expiry times.

use std::collections::BTreeMap;

/// What a server keeps across a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// `appendonly yes`, `appendfsync always`: nothing acknowledged is lost.
    AofAlways,
    /// Redis's default: RDB snapshots at the default save points, no AOF.
    RdbDefault,
}

/// Redis's default save points (seconds since the last save, changes since it), redis.conf 6.2+.
const SAVE_POINTS: [(i64, u64); 3] = [(3600, 1), (300, 100), (60, 10_000)];

#[derive(Clone, Debug, PartialEq, Eq)]
struct Value {
    value: String,
    /// Unix time in ms (the server's wall clock) after which the key is gone.
    expires_at_ms: i64,
}

/// The keyspace of one server, and what is on its disk.
#[derive(Clone, Debug)]
pub struct Keyspace {
    persistence: Persistence,
    keys: BTreeMap<String, Value>,
    /// The last snapshot (RDB) or, with the AOF, the same as `keys`.
    on_disk: BTreeMap<String, Value>,
    /// Writes since the last snapshot (Redis's `server.dirty`).
    dirty: u64,
    /// Wall-clock time of the last snapshot, in ms.
    last_save_ms: i64,
}

impl Keyspace {
    /// An empty keyspace; `now_ms` is the server's wall clock at start (its last save).
    pub fn new(persistence: Persistence, now_ms: i64) -> Self {
        Keyspace { persistence, keys: BTreeMap::new(), on_disk: BTreeMap::new(), dirty: 0, last_save_ms: now_ms }
    }

    /// `SET key value NX PX ttl_ms`: true (`OK`) if the key did not exist (or had expired) and is
    /// now set to expire `ttl_ms` after `now_ms`; false (`nil`) if it exists.
    pub fn set_nx_px(&mut self, key: &str, value: &str, ttl_ms: u64, now_ms: i64) -> bool {
        assert!(ttl_ms > 0, "Redis refuses PX 0 (ERR invalid expire time): the recipe never sends it");
        if self.get(key, now_ms).is_some() {
            return false;
        }
        let expires_at_ms = now_ms.saturating_add(ttl_ms.min(i64::MAX as u64) as i64);
        self.keys.insert(key.to_string(), Value { value: value.to_string(), expires_at_ms });
        self.written();
        true
    }

    /// The release script (`if GET key == value then DEL key`): true if the key held `value`
    /// and is now deleted.
    pub fn delete_if_value(&mut self, key: &str, value: &str, now_ms: i64) -> bool {
        if self.get(key, now_ms) != Some(value) {
            return false;
        }
        self.keys.remove(key);
        self.written();
        true
    }

    /// `GET key` at wall time `now_ms`.
    pub fn get(&mut self, key: &str, now_ms: i64) -> Option<&str> {
        let expired = self.keys.get(key).is_some_and(|v| now_ms > v.expires_at_ms);
        if expired {
            // Redis propagates a lazy expiry as a DEL (and counts it as a change).
            self.keys.remove(key);
            self.written();
        }
        self.keys.get(key).map(|v| v.value.as_str())
    }

    /// The server's periodic work (`serverCron`): a snapshot when a save point is reached.
    pub fn cron(&mut self, now_ms: i64) {
        if self.persistence != Persistence::RdbDefault {
            return;
        }
        let since_s = now_ms.saturating_sub(self.last_save_ms) / 1000;
        if SAVE_POINTS.iter().any(|&(seconds, changes)| self.dirty >= changes && since_s > seconds) {
            self.on_disk = self.keys.clone();
            self.dirty = 0;
            self.last_save_ms = now_ms;
        }
    }

    /// The process died: memory is gone; what comes back at restart is what was on disk.
    pub fn crash(&mut self) {
        self.keys = self.on_disk.clone();
        self.dirty = 0;
    }

    /// The server (re)started at wall time `now_ms`: Redis counts the dataset it loaded as saved
    /// then (`lastsave` is set at start).
    pub fn started(&mut self, now_ms: i64) {
        self.last_save_ms = now_ms;
        self.dirty = 0;
    }

    fn written(&mut self) {
        self.dirty += 1;
        if self.persistence == Persistence::AofAlways {
            self.on_disk = self.keys.clone();
        }
    }

    /// Keys present (expired ones included until they are touched), for tests.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_nx_takes_a_free_or_expired_key_only() {
        let mut keys = Keyspace::new(Persistence::AofAlways, 0);
        assert!(keys.set_nx_px("lock", "c1-1", 1000, 0));
        assert!(!keys.set_nx_px("lock", "c2-1", 1000, 999));
        assert!(!keys.set_nx_px("lock", "c2-1", 1000, 1000), "a key lives until its expiry time has passed");
        assert!(keys.set_nx_px("lock", "c2-1", 1000, 1001));
        assert_eq!(keys.get("lock", 1001), Some("c2-1"));
    }

    #[test]
    fn a_wall_clock_jump_expires_a_key_early() {
        let mut keys = Keyspace::new(Persistence::AofAlways, 0);
        assert!(keys.set_nx_px("lock", "c1-1", 10_000, 5_000));
        // One true second later, the server's clock was stepped 20 s ahead.
        assert_eq!(keys.get("lock", 26_000), None);
        assert!(keys.set_nx_px("lock", "c2-1", 10_000, 26_000));
    }

    #[test]
    fn only_the_holder_value_deletes() {
        let mut keys = Keyspace::new(Persistence::AofAlways, 0);
        assert!(keys.set_nx_px("lock", "c1-1", 1000, 0));
        assert!(!keys.delete_if_value("lock", "c2-1", 10));
        assert!(keys.delete_if_value("lock", "c1-1", 10));
        assert!(!keys.delete_if_value("lock", "c1-1", 10));
        assert_eq!(keys.len(), 0);
    }

    #[test]
    fn the_aof_keeps_every_write_across_a_crash() {
        let mut keys = Keyspace::new(Persistence::AofAlways, 0);
        assert!(keys.set_nx_px("lock", "c1-1", 10_000, 100));
        keys.crash();
        assert_eq!(keys.get("lock", 200), Some("c1-1"));
        assert_eq!(keys.get("lock", 10_101), None, "a restored key keeps its absolute expiry");
    }

    #[test]
    fn default_snapshots_lose_what_came_after_the_last_save() {
        let mut keys = Keyspace::new(Persistence::RdbDefault, 0);
        assert!(keys.set_nx_px("old", "v", 10_000_000, 0));
        keys.cron(3_600_000); // 3600 s since the last save is not more than 3600 s
        keys.crash();
        assert_eq!(keys.get("old", 3_600_000), None);

        assert!(keys.set_nx_px("old", "v", 10_000_000, 3_600_000));
        keys.cron(3_601_000);
        assert!(keys.set_nx_px("new", "v", 10_000_000, 3_602_000));
        keys.cron(3_603_000);
        keys.crash();
        assert_eq!(keys.get("old", 3_604_000), Some("v"), "saved at 3601 s");
        assert_eq!(keys.get("new", 3_604_000), None, "set after the last save");
    }

    #[test]
    fn a_hundred_changes_are_saved_after_five_minutes() {
        let mut keys = Keyspace::new(Persistence::RdbDefault, 0);
        for i in 0..100 {
            assert!(keys.set_nx_px(&format!("k{i}"), "v", 10_000_000, 1_000));
        }
        keys.cron(300_000);
        keys.crash();
        assert_eq!(keys.len(), 0);
        for i in 0..100 {
            assert!(keys.set_nx_px(&format!("k{i}"), "v", 10_000_000, 301_000));
        }
        keys.cron(301_001);
        keys.crash();
        assert_eq!(keys.len(), 100);
    }
}

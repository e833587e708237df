//! The Raft log, vote and latest snapshot of one server, kept in memory outside the server's
//! tasks so that they survive a simulated crash (`Handle::kill` / `restart`).
//!
//! By default every write is durable the moment it returns (an fsync per append): a crash loses
//! only what the state machine had applied in memory, which openraft replays from this log on
//! restart. With `fsync` off the server acknowledges appends and votes before they reach the
//! disk, syncing only now and then ([`Durable::sync`]); a crash ([`Durable::crash`]) loses
//! everything since the last sync — acknowledged entries and votes included — which is what
//! the durability checker exists to catch.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{IOFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogReader};

use super::{Entry, LogId, SnapshotMeta, StoreSnapshot, TypeConfig, Vote};
use crate::timing::Disk;

/// What one server keeps across crashes.
#[derive(Debug)]
pub struct Durable {
    pub vote: Option<Vote>,
    pub committed: Option<LogId>,
    pub last_purged: Option<LogId>,
    pub entries: BTreeMap<u64, Entry>,
    /// The latest snapshot the state machine built or installed.
    pub snapshot: Option<(SnapshotMeta, StoreSnapshot)>,
    /// Whether every append and vote is synced before it is acknowledged.
    pub fsync: bool,
    /// What is on disk when `fsync` is off: the log through this index, and this vote.
    synced_through: Option<u64>,
    synced_vote: Option<Vote>,
}

impl Default for Durable {
    fn default() -> Self {
        Durable::new(true)
    }
}

impl Durable {
    pub fn new(fsync: bool) -> Self {
        Durable {
            vote: None,
            committed: None,
            last_purged: None,
            entries: BTreeMap::new(),
            snapshot: None,
            fsync,
            synced_through: None,
            synced_vote: None,
        }
    }

    /// Everything written so far reaches the disk.
    pub fn sync(&mut self) {
        self.synced_through = self.entries.keys().next_back().copied();
        self.synced_vote = self.vote.clone();
    }

    /// The process dies: what was not synced is gone. With `fsync` on, nothing is lost.
    pub fn crash(&mut self) {
        if self.fsync {
            return;
        }
        let synced = self.synced_through;
        self.entries.retain(|index, _| synced.is_some_and(|last| *index <= last));
        self.vote = self.synced_vote.clone();
        if let (Some(committed), last) = (&self.committed, synced)
            && last.is_none_or(|last| committed.index > last)
        {
            self.committed = None;
        }
    }
}

/// A handle on a server's durable state; cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct LogStore {
    durable: Arc<Mutex<Durable>>,
    /// The server's disk when the time model gives syncs a cost (`crate::timing`): an append is
    /// acknowledged, and a vote saved, once a sync that began after it has ended.
    disk: Option<Disk>,
    /// Whether an append holds openraft's core until it is synced (etcd's raft loop), instead of
    /// returning at once and acknowledging when synced (`ServerTimes::sync_blocks_consensus`).
    sync_blocks: bool,
    /// This server's id, when its own entries count as flushed on the leader as soon as they
    /// are appended (`ServerTimes::leader_commits_before_sync`).
    leader_unsynced: Option<u64>,
}

impl LogStore {
    pub fn new(durable: Arc<Mutex<Durable>>, disk: Option<Disk>, sync_blocks: bool) -> Self {
        LogStore { durable, disk, sync_blocks, leader_unsynced: None }
    }

    /// With `on`, server `id` acknowledges the entries it appends as the leader at once and
    /// syncs them in the background.
    pub fn leader_commits_before_sync(mut self, id: u64, on: bool) -> Self {
        self.leader_unsynced = on.then_some(id);
        self
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Durable> {
        self.durable.lock().expect("durable state lock poisoned")
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(self.lock().entries.range(range).map(|(_, entry)| entry.clone()).collect())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.lock().vote.clone())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let durable = self.lock();
        let last_log_id =
            durable.entries.values().next_back().map(|entry| entry.log_id.clone()).or(durable.last_purged.clone());
        Ok(LogState { last_purged_log_id: durable.last_purged.clone(), last_log_id })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let fsync = {
            let mut durable = self.lock();
            durable.vote = Some(vote.clone());
            if durable.fsync {
                durable.sync();
            }
            durable.fsync
        };
        // A vote is answered only once it is on disk (Raft §5.1's persistent state).
        if let Some(disk) = self.disk.as_ref().filter(|_| fsync)
            && !disk.sync().await
        {
            return Err(io::Error::other("the disk is gone with its server"));
        }
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        self.lock().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.lock().committed.clone())
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<TypeConfig>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let (fsync, own) = {
            let mut durable = self.lock();
            // Entries this server proposed, appended while its vote makes it the leader.
            let leading = self.leader_unsynced.is_some_and(|id| {
                durable.vote.as_ref().is_some_and(|vote| vote.committed && vote.leader_id.node_id == id)
            });
            let mut own = leading;
            for entry in entries {
                own &= self.leader_unsynced == Some(entry.log_id.leader_id.node_id);
                durable.entries.insert(entry.log_id.index, entry);
            }
            if durable.fsync {
                durable.sync();
            }
            (durable.fsync, own)
        };
        match self.disk.clone().filter(|_| fsync) {
            // openraft awaits `append` in its core task: waiting here stalls the whole loop
            // (heartbeats, acknowledgements, commits), as a slow WAL sync stalls etcd's (etcd
            // issue 15247). Only under a `slow-disk` fault: etcd's leader sends a Ready's
            // entries before it saves them, where openraft replicates them once the append has
            // returned, so blocking on every sync would put the leader's and the followers'
            // syncs one after the other where etcd runs them side by side.
            Some(disk) if self.sync_blocks && crate::timing::disk_slowed() => {
                if disk.sync().await {
                    callback.io_completed(Ok(()));
                }
            }
            // etcd's leader: its own entries count toward the commit at once, synced meanwhile.
            Some(disk) if own => {
                callback.io_completed(Ok(()));
                madsim::task::spawn(async move {
                    disk.sync().await;
                });
            }
            // The append is in memory at once (a leader replicates it meanwhile, as etcd sends
            // before its WAL sync ends); it counts as flushed when the disk has synced it.
            Some(disk) => {
                madsim::task::spawn(async move {
                    if disk.sync().await {
                        callback.io_completed(Ok(()));
                    }
                });
            }
            None => callback.io_completed(Ok(())),
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let mut durable = self.lock();
        let keep_through = last_log_id.map(|id| id.index);
        durable.entries.retain(|index, _| keep_through.is_some_and(|last| *index <= last));
        durable.synced_through = durable.synced_through.min(keep_through);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let mut durable = self.lock();
        assert!(
            durable.last_purged.as_ref().is_none_or(|purged| purged.index <= log_id.index),
            "purge must move forward: purged {:?}, asked {:?}",
            durable.last_purged,
            log_id
        );
        durable.entries.retain(|index, _| *index > log_id.index);
        durable.last_purged = Some(log_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64) -> Entry {
        use openraft::entry::RaftEntry;
        Entry::new_blank(openraft::testing::log_id::<super::super::TypeConfig>(1, 1, index))
    }

    #[test]
    fn with_fsync_a_crash_loses_nothing() {
        let mut durable = Durable::new(true);
        durable.entries.insert(1, entry(1));
        durable.sync();
        durable.entries.insert(2, entry(2));
        durable.crash();
        assert_eq!(durable.entries.len(), 2);
    }

    #[test]
    fn without_fsync_a_crash_loses_what_was_not_synced() {
        let mut durable = Durable::new(false);
        durable.entries.insert(1, entry(1));
        durable.sync();
        durable.entries.insert(2, entry(2));
        durable.entries.insert(3, entry(3));
        durable.crash();
        assert_eq!(durable.entries.keys().copied().collect::<Vec<_>>(), vec![1]);
    }
}

//! The Raft log, vote and latest snapshot of one server, kept in memory outside the server's
//! tasks so that they survive a simulated crash (`Handle::kill` / `restart`).
//!
//! Every append is durable the moment `append` returns: a crash loses only what the state
//! machine had applied in memory, which openraft replays from this log on restart.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{IOFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogReader};

use super::{Entry, LogId, SnapshotMeta, StoreSnapshot, TypeConfig, Vote};

/// What one server keeps across crashes.
#[derive(Debug, Default)]
pub struct Durable {
    pub vote: Option<Vote>,
    pub committed: Option<LogId>,
    pub last_purged: Option<LogId>,
    pub entries: BTreeMap<u64, Entry>,
    /// The latest snapshot the state machine built or installed.
    pub snapshot: Option<(SnapshotMeta, StoreSnapshot)>,
}

/// A handle on a server's durable state; cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct LogStore {
    durable: Arc<Mutex<Durable>>,
}

impl LogStore {
    pub fn new(durable: Arc<Mutex<Durable>>) -> Self {
        LogStore { durable }
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
        self.lock().vote = Some(vote.clone());
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
        {
            let mut durable = self.lock();
            for entry in entries {
                durable.entries.insert(entry.log_id.index, entry);
            }
        }
        callback.io_completed(Ok(()));
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let mut durable = self.lock();
        let keep_through = last_log_id.map(|id| id.index);
        durable.entries.retain(|index, _| keep_through.is_some_and(|last| *index <= last));
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

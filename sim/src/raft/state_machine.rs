//! The openraft state machine adapter: committed entries go to [`Store::apply`], in log order.
//!
//! The applied state is shared (behind a mutex that is never held across an `.await`) with the
//! server's request handlers, which read from it after a read index and long-poll it for
//! watches; `on_apply` lets the server react to each applied command (lessor bookkeeping,
//! waking watchers).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use serde::{Deserialize, Serialize};

use super::{ApplyResult, LogId, LogStore, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};
use crate::store::{Command, CommandResponse, Store};

/// A full copy of the store: snapshots are whole-state in the simulator (no serialization
/// happens on madsim's in-process network).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSnapshot {
    pub store: Store,
}

/// The state a server has applied.
#[derive(Debug, Default)]
pub struct Applied {
    pub store: Store,
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership,
}

/// Called after each applied command with its response (under no lock).
pub type OnApply = Arc<dyn Fn(&Command, &CommandResponse) + Send + Sync>;

#[derive(Clone)]
pub struct StateMachine {
    applied: Arc<Mutex<Applied>>,
    durable: LogStore,
    on_apply: OnApply,
}

impl StateMachine {
    /// Starts from the durable snapshot if the server has one (a restart), else empty.
    pub fn new(durable: LogStore, snapshot: Option<(SnapshotMeta, StoreSnapshot)>, on_apply: OnApply) -> Self {
        let applied = match snapshot {
            Some((meta, data)) => Applied {
                store: data.store,
                last_applied: meta.last_log_id.clone(),
                membership: meta.last_membership.clone(),
            },
            None => Applied::default(),
        };
        StateMachine { applied: Arc::new(Mutex::new(applied)), durable, on_apply }
    }

    /// The applied state, shared with the server's handlers.
    pub fn applied(&self) -> Arc<Mutex<Applied>> {
        self.applied.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Applied> {
        self.applied.lock().expect("applied state lock poisoned")
    }

    fn snapshot_now(&self) -> Snapshot {
        let applied = self.lock();
        let meta =
            SnapshotMeta { last_log_id: applied.last_applied.clone(), last_membership: applied.membership.clone() };
        Snapshot { meta, snapshot: StoreSnapshot { store: applied.store.clone() } }
    }

    fn save_snapshot(&self, snapshot: &Snapshot) {
        let mut durable = self.durable_lock();
        durable.snapshot = Some((snapshot.meta.clone(), snapshot.snapshot.clone()));
    }

    fn durable_lock(&self) -> MutexGuard<'_, super::Durable> {
        self.durable.lock()
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    type SnapshotData = StoreSnapshot;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        let snapshot = self.snapshot_now();
        self.save_snapshot(&snapshot);
        Ok(snapshot)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotData = StoreSnapshot;
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let applied = self.lock();
        Ok((applied.last_applied.clone(), applied.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let (result, command) = {
                let mut applied = self.lock();
                if let Some(last) = &applied.last_applied {
                    assert!(
                        entry.log_id.index > last.index,
                        "entries apply in log order: {} after {}",
                        entry.log_id,
                        last
                    );
                }
                applied.last_applied = Some(entry.log_id.clone());
                match entry.payload {
                    EntryPayload::Blank => (ApplyResult::Internal, None),
                    EntryPayload::Normal(command) => {
                        let response = applied.store.apply(&command);
                        (ApplyResult::Command(response), Some(command))
                    }
                    EntryPayload::Membership(membership) => {
                        applied.membership = StoredMembership::new(Some(entry.log_id.clone()), membership);
                        (ApplyResult::Internal, None)
                    }
                }
            };
            if let (Some(command), ApplyResult::Command(response)) = (&command, &result) {
                (self.on_apply)(command, response);
            }
            if let Some(responder) = responder {
                responder.send(result);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: StoreSnapshot) -> Result<(), io::Error> {
        {
            let mut applied = self.lock();
            applied.store = snapshot.store.clone();
            applied.last_applied = meta.last_log_id.clone();
            applied.membership = meta.last_membership.clone();
        }
        let mut durable = self.durable_lock();
        durable.snapshot = Some((meta.clone(), snapshot));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let durable = self.durable_lock();
        Ok(durable.snapshot.as_ref().map(|(meta, data)| Snapshot { meta: meta.clone(), snapshot: data.clone() }))
    }
}

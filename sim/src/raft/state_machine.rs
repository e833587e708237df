//! The openraft state machine adapter: committed entries go to [`Store::apply`], in log order.
//!
//! The applied state is shared (behind a mutex that is never held across an `.await`) with the
//! server's request handlers, which read from it after a read index and long-poll it for
//! watches; `on_apply` lets the server react to each applied command (lessor bookkeeping,
//! waking watchers).

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use serde::{Deserialize, Serialize};

use super::{ApplyResult, LogId, LogStore, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};
use crate::store::{Command, CommandResponse, KeyRange, Store};
use crate::timing::ServerCosts;

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
    /// The watch long-polls waiting on this server, by registration number: what applying a
    /// change notifies (and, with a watch event cost, pays for).
    pub watchers: BTreeMap<u64, KeyRange>,
    pub next_watcher: u64,
}

impl Applied {
    /// Registers a waiting watch long-poll; [`Applied::unregister_watcher`] ends it.
    pub fn register_watcher(&mut self, range: KeyRange) -> u64 {
        self.next_watcher += 1;
        self.watchers.insert(self.next_watcher, range);
        self.next_watcher
    }

    pub fn unregister_watcher(&mut self, id: u64) {
        self.watchers.remove(&id);
    }

    /// How many (watcher, event) notifications the changes after revision `before` make.
    fn notifications(&self, before: i64) -> u64 {
        if self.watchers.is_empty() || self.store.revision() <= before {
            return 0;
        }
        let Ok(events) = self.store.events(&KeyRange::Prefix(String::new()), before + 1, false) else { return 0 };
        let pairs = events.iter().map(|e| self.watchers.values().filter(|range| range.contains(&e.kv.key)).count());
        pairs.sum::<usize>() as u64
    }
}

/// Called after each applied command with its response (under no lock).
pub type OnApply = Arc<dyn Fn(&Command, &CommandResponse) + Send + Sync>;

#[derive(Clone)]
pub struct StateMachine {
    applied: Arc<Mutex<Applied>>,
    durable: LogStore,
    on_apply: OnApply,
    /// True time spent per watcher notified of an event, before the next entry applies.
    watch_event_cost: Duration,
    /// The time model's costs: each entry's apply takes its turn on the server's CPU.
    costs: Option<Arc<ServerCosts>>,
}

impl StateMachine {
    /// Starts from the durable snapshot if the server has one (a restart), else empty.
    ///
    /// `watch_event_cost`: the true time applying an entry takes per (watcher, event)
    /// notification it makes (zero: none).
    pub fn new(
        durable: LogStore,
        snapshot: Option<(SnapshotMeta, StoreSnapshot)>,
        on_apply: OnApply,
        watch_event_cost: Duration,
        costs: Option<Arc<ServerCosts>>,
    ) -> Self {
        let applied = match snapshot {
            Some((meta, data)) => Applied {
                store: data.store,
                last_applied: meta.last_log_id.clone(),
                membership: meta.last_membership.clone(),
                ..Applied::default()
            },
            None => Applied::default(),
        };
        StateMachine { applied: Arc::new(Mutex::new(applied)), durable, on_apply, watch_event_cost, costs }
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
            if let Some(costs) = &self.costs {
                costs.apply().await;
            }
            let (result, command, notifications) = {
                let mut applied = self.lock();
                let before = applied.store.revision();
                if let Some(last) = &applied.last_applied {
                    assert!(
                        entry.log_id.index > last.index,
                        "entries apply in log order: {} after {}",
                        entry.log_id,
                        last
                    );
                }
                applied.last_applied = Some(entry.log_id.clone());
                let (result, command) = match entry.payload {
                    EntryPayload::Blank => (ApplyResult::Internal, None),
                    EntryPayload::Normal(command) => {
                        let response = applied.store.apply(&command);
                        (ApplyResult::Command(response), Some(command))
                    }
                    EntryPayload::Membership(membership) => {
                        applied.membership = StoredMembership::new(Some(entry.log_id.clone()), membership);
                        (ApplyResult::Internal, None)
                    }
                };
                let notifications = if self.watch_event_cost.is_zero() { 0 } else { applied.notifications(before) };
                (result, command, notifications)
            };
            // The apply loop notifies the entry's watchers before it takes the next entry (and
            // before the entry's writer hears back), as etcd's does; no lock is held meanwhile.
            if notifications > 0 {
                madsim::time::sleep(self.watch_event_cost * notifications as u32).await;
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::PutRequest;

    fn put(applied: &mut Applied, key: &str) {
        let request = PutRequest { key: key.into(), value: "v".into(), lease: 0, prev_kv: false, ignore_lease: false };
        applied.store.apply(&Command::Put(request));
    }

    #[test]
    fn each_change_notifies_every_waiting_watcher_whose_range_has_its_key() {
        let mut applied = Applied::default();
        let a1 = applied.register_watcher(KeyRange::Prefix("/a/".into()));
        applied.register_watcher(KeyRange::Prefix("/a/".into()));
        applied.register_watcher(KeyRange::Key("/b".into()));
        let before = applied.store.revision();
        put(&mut applied, "/a/x");
        assert_eq!(applied.notifications(before), 2, "two watchers of /a/, none of /b");
        let before = applied.store.revision();
        put(&mut applied, "/a/y");
        put(&mut applied, "/b");
        assert_eq!(applied.notifications(before), 3, "two changes since: /a/y to two, /b to one");
        applied.unregister_watcher(a1);
        let before = applied.store.revision();
        put(&mut applied, "/a/z");
        assert_eq!(applied.notifications(before), 1, "a returned long-poll is no longer notified");
        assert_eq!(applied.notifications(applied.store.revision()), 0, "nothing changed");
    }
}

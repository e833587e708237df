//! etcd's concurrency mutex written out on plain calls (`client/v3/concurrency/mutex.go`,
//! `key.go`'s `waitDeletes`, etcd v3.5): a key per lease under the lock's prefix, created in a
//! transaction if absent; the holder is the key with the lowest create revision; a waiter watches
//! the key just before its own, from the revision of the read that found it, until it is
//! deleted. The holder's create revision is its fencing token.
//!
//! Two variants of what the holder does with its lease:
//! - [`Variant::StepsDownAtDeadline`]: keeps the lease alive from a task of its own while it
//!   waits and holds, and stops acting once the lease may have expired by its own clock: one TTL
//!   minus a margin after sending the last keepalive that was answered. After waiting it reads
//!   its own key, as etcd's `Mutex.Lock` does after `waitDeletes` (`ErrSessionExpired` when it is
//!   gone: the key went with the lease, and the place in the queue with it; etcd issue 19597).
//! - [`Variant::IgnoresLeaseLoss`]: holds until a keepalive answers that the lease is gone, so a
//!   holder cut off from etcd holds alongside its successor once the servers expired its lease.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::etcd_client::{
    self, Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, WatchOptions,
};
use crate::time::{self, Instant};
use crate::{Effects, task};

/// The lock's prefix: the queue is the keys under `PREFIX/`.
pub const PREFIX: &str = "/own/txn-mutex";
/// The lease's time to live, in seconds.
pub const TTL_S: i64 = 5;
/// How often the lease is renewed.
pub const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);
/// What the holder keeps back from its TTL for clock drift and a write in flight.
pub const SAFETY_MARGIN: Duration = Duration::from_secs(1);
/// Writes per hold (10 s of work), and the time between them.
pub const WRITES_PER_HOLD: u32 = 50;
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// What the holder does with its lease; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    StepsDownAtDeadline,
    IgnoresLeaseLoss,
}

/// Runs one client for ever: a lease, then lock, write, unlock, until the lease is gone.
pub async fn run_client(endpoints: Vec<String>, name: String, variant: Variant, effects: impl Effects) {
    loop {
        if let Ok(client) = Client::connect(&endpoints, None).await {
            let _ = one_lease(client, &name, variant, &effects).await;
        }
        time::sleep(Duration::from_millis(500)).await;
    }
}

/// The lease as the client knows it, kept by its keepalive task.
#[derive(Debug)]
struct Renewals {
    /// Send time of the newest keepalive known to have been answered.
    acknowledged: Instant,
    /// A keepalive was answered TTL 0: the lease is gone.
    lost: bool,
}

impl Renewals {
    /// When the lease may have expired on the servers, by this client's clock.
    fn deadline(&self) -> Instant {
        self.acknowledged + Duration::from_secs(TTL_S as u64) - SAFETY_MARGIN
    }
}

/// One lease: as many holds as it lasts.
async fn one_lease(
    mut client: Client,
    name: &str,
    variant: Variant,
    effects: &impl Effects,
) -> Result<(), etcd_client::Error> {
    let granted_at = Instant::now();
    let lease = client.lease_grant(TTL_S, None).await?.id();
    let renewals = Arc::new(Mutex::new(Renewals { acknowledged: granted_at, lost: false }));
    let keepalives = task::spawn(keep_alive(client.clone(), lease, renewals.clone()));
    let usable = |renewals: &Mutex<Renewals>| {
        let renewals = renewals.lock().expect("renewals lock");
        !renewals.lost && (variant == Variant::IgnoresLeaseLoss || Instant::now() < renewals.deadline())
    };
    let result = async {
        let key = format!("{PREFIX}/{lease:x}");
        while usable(&renewals) {
            let token = lock(&mut client, &key, lease, name).await?;
            if !usable(&renewals) {
                break;
            }
            effects.holding(PREFIX, token);
            let mut reason = "done";
            for write in 1..=WRITES_PER_HOLD {
                if !usable(&renewals) {
                    reason = if renewals.lock().expect("renewals lock").lost {
                        "lease not found"
                    } else {
                        "lease may have expired"
                    };
                    break;
                }
                effects.write(token, format!("{name}-{token}-{write}")).await;
                time::sleep(WORK_EVERY).await;
            }
            effects.released(PREFIX, token, reason);
            if reason != "done" {
                break;
            }
            client.delete(key.as_str(), None).await?;
            time::sleep(WORK_EVERY).await;
        }
        Ok(())
    }
    .await;
    keepalives.abort();
    let _ = client.lease_revoke(lease).await;
    result
}

/// Enters the queue with `key` (if this lease is not in it yet) and waits until it is first.
/// Returns the key's create revision: the fencing token.
async fn lock(client: &mut Client, key: &str, lease: i64, name: &str) -> Result<i64, etcd_client::Error> {
    let enter = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(key, name, Some(PutOptions::new().with_lease(lease)))])
        .or_else([TxnOp::get(key, None)]);
    let entered = client.txn(enter).await?;
    let token = if entered.succeeded() {
        entered.header().map_or(0, |h| h.revision())
    } else {
        match entered.op_responses().first() {
            Some(TxnOpResponse::Get(got)) => got.kvs().first().map_or(0, |kv| kv.create_revision()),
            _ => 0,
        }
    };
    // waitDeletes: the newest key created before ours, until there is none.
    let queue = format!("{PREFIX}/");
    loop {
        let before = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(token - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1);
        let found = client.get(queue.as_str(), Some(before)).await?;
        let Some(predecessor) = found.kvs().first() else { break };
        let revision = found.header().map_or(0, |h| h.revision());
        let from = WatchOptions::new().with_start_revision(revision + 1);
        let mut stream = client.watch(predecessor.key(), Some(from)).await?;
        'deleted: while let Some(answer) = stream.message().await? {
            if answer.canceled() {
                break;
            }
            for event in answer.events() {
                if event.event_type() == EventType::Delete {
                    break 'deleted;
                }
            }
        }
    }
    // The key may have gone with the lease while we waited: then the place in the queue is gone.
    let ours = client.get(key, None).await?;
    match ours.kvs().first() {
        Some(kv) if kv.create_revision() == token => Ok(token),
        _ => Err(etcd_client::Error::LeaseKeepAliveError("the lock's key is gone: its lease expired".into())),
    }
}

/// Renews `lease` every [`KEEPALIVE_EVERY`] and records what the answers say. An answer is
/// credited to the oldest keepalive not answered yet: if answers come late, that only moves the
/// deadline earlier.
async fn keep_alive(mut client: Client, lease: i64, renewals: Arc<Mutex<Renewals>>) {
    let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
    let mut pending: VecDeque<Instant> = VecDeque::new();
    loop {
        let sent = Instant::now();
        if keeper.keep_alive().await.is_ok() {
            pending.push_back(sent);
        }
        let next = sent + KEEPALIVE_EVERY;
        while let Ok(answer) = time::timeout_at(next, answers.message()).await {
            let Ok(Some(answer)) = answer else {
                time::sleep_until(next).await;
                break;
            };
            let Some(sent) = pending.pop_front() else { continue };
            let mut renewals = renewals.lock().expect("renewals lock");
            if answer.ttl() <= 0 {
                renewals.lost = true;
                return;
            }
            renewals.acknowledged = renewals.acknowledged.max(sent);
        }
    }
}

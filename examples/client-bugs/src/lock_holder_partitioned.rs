//! etcd issue 10811: a client holding a lock from the concurrency package (or the Lock API) loses
//! its connection to etcd; its lease expires on the servers, the waiter behind it is granted the
//! lock, and the first client goes on working as the holder, since nothing told it otherwise.
//! The fix on the client's side: stop acting as the holder once the lease may have expired by
//! the client's own clock (one TTL minus a margin after sending the last keepalive that was
//! answered), and fence the store with the lock key's revision for what a pause can still let
//! through.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::etcd_client::{Client, LockOptions};
use crate::time::{self, Instant};
use crate::{Effects, task};

pub const LOCK: &str = "/jobs/partitioned";
pub const TTL_S: i64 = 5;
/// Kept back from the TTL for clock drift and a write in flight.
pub const MARGIN: Duration = Duration::from_secs(1);
/// Writes per hold (12 s of work), and the time between them.
pub const WRITES: u32 = 60;
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// Lock, work, unlock, for ever, a new lease each time the old one is gone. `fixed`: steps down
/// at its lease's deadline.
pub async fn run(endpoints: Vec<String>, name: String, fixed: bool, effects: impl Effects) {
    loop {
        if let Ok(client) = Client::connect(&endpoints, None).await {
            one_lease(client, &name, fixed, &effects).await;
        }
        time::sleep(Duration::from_millis(500)).await;
    }
}

async fn one_lease(mut client: Client, name: &str, fixed: bool, effects: &impl Effects) {
    let asked = Instant::now();
    let Ok(lease) = client.lease_grant(TTL_S, None).await.map(|g| g.id()) else { return };
    let acknowledged = Arc::new(Mutex::new((asked, false)));
    let renewals = task::spawn(renew(client.clone(), lease, acknowledged.clone()));
    let deadline = |acknowledged: &Mutex<(Instant, bool)>| {
        let (at, gone) = *acknowledged.lock().expect("renewals");
        (!gone).then(|| at + Duration::from_secs(TTL_S as u64) - MARGIN)
    };
    while let Ok(held) = client.lock(LOCK, Some(LockOptions::new().with_lease(lease))).await {
        let token = held.header().map_or(0, |h| h.revision());
        effects.holding(LOCK, token);
        let mut reason = "done";
        for write in 1..=WRITES {
            let usable = match deadline(&acknowledged) {
                None => false,
                Some(at) => !fixed || Instant::now() < at,
            };
            if !usable {
                reason = "lease may have expired";
                break;
            }
            effects.write(token, format!("{name}-{token}-{write}")).await;
            time::sleep(WORK_EVERY).await;
        }
        effects.released(LOCK, token, reason);
        if reason != "done" || client.unlock(held.key()).await.is_err() {
            break;
        }
        time::sleep(WORK_EVERY).await;
    }
    renewals.abort();
    let _ = client.lease_revoke(lease).await;
}

/// Renews every second; an answer is credited to the oldest keepalive not yet answered (late
/// answers only move the deadline earlier). Sets the flag when the lease is gone.
async fn renew(mut client: Client, lease: i64, acknowledged: Arc<Mutex<(Instant, bool)>>) {
    let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
    let mut pending: VecDeque<Instant> = VecDeque::new();
    loop {
        let sent = Instant::now();
        if keeper.keep_alive().await.is_ok() {
            pending.push_back(sent);
        }
        let next = sent + Duration::from_secs(1);
        while let Ok(Ok(Some(answer))) = time::timeout_at(next, answers.message()).await {
            let Some(sent) = pending.pop_front() else { continue };
            let mut state = acknowledged.lock().expect("renewals");
            if answer.ttl() <= 0 {
                state.1 = true;
                return;
            }
            state.0 = state.0.max(sent);
        }
        time::sleep_until(next).await;
    }
}

//! etcd issue 22082: `Mutex.Unlock` deletes its key by name. If the delete commits but its
//! answer is lost, the unlock returns an error; the client locks again under the same session,
//! which reuses the key name at a newer create revision, and a retry of the old unlock then
//! deletes the new lock: the next waiter is granted the lock while this client still holds it.
//! The fix (etcd PR 22115) makes the delete a transaction on the key's create revision: a stale
//! unlock deletes nothing.

use std::time::Duration;

use crate::etcd_client::{Client, Compare, CompareOp, ConnectOptions, LockOptions, Txn, TxnOp};
use crate::{Effects, renew_every_second, task, time};

pub const LOCK: &str = "/jobs/stale-unlock";
/// Writes per hold, and the time between them.
pub const WRITES: u32 = 5;
pub const WORK_EVERY: Duration = Duration::from_millis(200);
/// How long an unlock may take before the client calls it failed.
pub const UNLOCK_TIMEOUT: Duration = Duration::from_millis(500);
/// When a failed unlock is retried.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Locks, works, unlocks, again and again, under one lease. A failed unlock is retried in the
/// background. `fixed`: the unlock deletes the key only if it is still this grant's.
pub async fn run(endpoints: Vec<String>, name: String, fixed: bool, effects: impl Effects) {
    let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
    let quick = Some(ConnectOptions::new().with_timeout(UNLOCK_TIMEOUT));
    let Ok(unlocker) = Client::connect(&endpoints, quick).await else { return };
    let Ok(lease) = client.lease_grant(10, None).await.map(|g| g.id()) else { return };
    let _renewals = task::spawn(renew_every_second(client.clone(), lease));
    loop {
        let Ok(held) = client.lock(LOCK, Some(LockOptions::new().with_lease(lease))).await else {
            time::sleep(WORK_EVERY).await;
            continue;
        };
        let token = held.header().map_or(0, |h| h.revision());
        let key = held.key().to_vec();
        effects.holding(LOCK, token);
        for write in 1..=WRITES {
            effects.write(token, format!("{name}-{token}-{write}")).await;
            time::sleep(WORK_EVERY).await;
        }
        effects.released(LOCK, token, "unlocking");
        if unlock(unlocker.clone(), key.clone(), token, fixed).await.is_err() {
            let retry = unlocker.clone();
            task::spawn(async move {
                time::sleep(RETRY_AFTER).await;
                let _ = unlock(retry, key, token, fixed).await;
            });
        }
        time::sleep(Duration::from_millis(100)).await;
    }
}

async fn unlock(mut client: Client, key: Vec<u8>, token: i64, fixed: bool) -> Result<(), crate::etcd_client::Error> {
    if fixed {
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, token)])
            .and_then([TxnOp::delete(key, None)]);
        client.txn(txn).await.map(|_| ())
    } else {
        client.delete(key, None).await.map(|_| ())
    }
}

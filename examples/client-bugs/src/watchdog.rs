//! Redisson issues 3521 and 1626: a lock taken without a lease time is kept alive by a watchdog
//! that renews it in the background. When the job holding the lock dies (an exception in the
//! holding thread) without unlocking, the watchdog goes on renewing: the lock is never released
//! and every other client waits for ever. The fix ties the renewals to the job: when the job
//! ends, however it ends, the renewals stop and the lock is released.
//!
//! Here on etcd: the watchdog is the task that keeps the lease alive, the lock is the Lock API's
//! under that lease, and the job of the first holder fails at once.

use std::time::Duration;

use crate::etcd_client::{Client, LockOptions};
use crate::{Effects, renew_every_second, task, time};

pub const LOCK: &str = "/jobs/watchdog";
pub const TTL_S: i64 = 3;
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// Takes the lock and runs a job under it, again and again; the first job of `failing` fails.
/// `fixed`: the job's failure stops the watchdog and releases the lock (revokes the lease).
pub async fn run(endpoints: Vec<String>, name: String, failing: bool, fixed: bool, effects: impl Effects) {
    let mut failing = failing;
    loop {
        let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
        let Ok(lease) = client.lease_grant(TTL_S, None).await.map(|g| g.id()) else { return };
        let watchdog = task::spawn(renew_every_second(client.clone(), lease));
        let Ok(held) = client.lock(LOCK, Some(LockOptions::new().with_lease(lease))).await else {
            watchdog.abort();
            continue;
        };
        let token = held.header().map_or(0, |h| h.revision());
        effects.holding(LOCK, token);
        if failing {
            // The job throws: no unlock. The process goes on (other work), and so does the
            // watchdog unless the job's end stops it.
            effects.released(LOCK, token, "job failed");
            failing = false;
            if fixed {
                watchdog.abort();
                let _ = client.lease_revoke(lease).await;
                continue;
            }
            std::future::pending::<()>().await;
        }
        for write in 1..=5 {
            effects.write(token, format!("{name}-{token}-{write}")).await;
            time::sleep(WORK_EVERY).await;
        }
        effects.released(LOCK, token, "done");
        let _ = client.unlock(held.key()).await;
        watchdog.abort();
        let _ = client.lease_revoke(lease).await;
    }
}

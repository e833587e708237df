//! etcd issue 19597: a client waiting in `Lock` whose session (lease) expires while it waits
//! finds out only when the keys before its own are deleted, that is when the holder releases:
//! `Mutex.Lock` (and the v3lock service built on it) waits in `waitDeletes` and looks at its own
//! key only afterwards. Until then the client's code sits in a call that can never be granted
//! rightly. The fix (etcd PR 22387) also watches the client's own key; a client of the Lock API
//! gets the same by giving the call up once its keepalives say the lease is gone.

use std::time::Duration;

use crate::etcd_client::{Client, LockOptions};
use crate::{Effects, first_of, task, time};

pub const LOCK: &str = "/jobs/lock";
/// The waiter's lease.
pub const TTL_S: i64 = 3;
/// How long the holder keeps the lock.
pub const HOLD: Duration = Duration::from_secs(20);

/// The holder: takes the lock, holds it for [`HOLD`], releases it and ends its lease.
pub async fn holder(endpoints: Vec<String>, effects: impl Effects) {
    let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
    let Ok(lease) = client.lease_grant(10, None).await.map(|g| g.id()) else { return };
    let renewals = task::spawn(renew(client.clone(), lease, None));
    if let Ok(held) = client.lock(LOCK, Some(LockOptions::new().with_lease(lease))).await {
        let token = held.header().map_or(0, |h| h.revision());
        effects.holding(LOCK, token);
        time::sleep(HOLD).await;
        effects.released(LOCK, token, "done");
        let _ = client.unlock(held.key()).await;
    }
    renewals.abort();
    let _ = client.lease_revoke(lease).await;
}

/// The waiter: asks for the lock under a lease it keeps alive from a task of its own. `fixed`:
/// gives the request up once a keepalive answers that the lease is gone.
pub async fn waiter(endpoints: Vec<String>, fixed: bool) {
    let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
    let Ok(lease) = client.lease_grant(TTL_S, None).await.map(|g| g.id()) else { return };
    let (gone_tx, gone_rx) = futures::channel::oneshot::channel();
    let renewals = task::spawn(renew(client.clone(), lease, Some(gone_tx)));
    let request = client.lock(LOCK, Some(LockOptions::new().with_lease(lease)));
    if fixed {
        let _ = first_of(request, gone_rx).await;
    } else {
        let _ = request.await;
    }
    renewals.abort();
}

/// A keepalive every second; says on `gone` (and stops) once one is answered TTL 0.
async fn renew(mut client: Client, lease: i64, gone: Option<futures::channel::oneshot::Sender<()>>) {
    let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
    loop {
        if keeper.keep_alive().await.is_err() {
            return;
        }
        if let Ok(Ok(Some(answer))) = time::timeout(Duration::from_secs(1), answers.message()).await
            && answer.ttl() <= 0
        {
            if let Some(gone) = gone {
                let _ = gone.send(());
            }
            return;
        }
        time::sleep(Duration::from_secs(1)).await;
    }
}

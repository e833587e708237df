// src/lib.rs of your crate: your election, against etcd-client's names. Two `use` switches make
// it run under the simulator: the client crate, and the timers and tasks.
#[cfg(madsim)]
use coordsim::etcd as etcd_client;
#[cfg(madsim)]
use coordsim::{task, time};
#[cfg(not(madsim))]
use tokio::{task, time};

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, ResignOptions};
use time::Instant;

pub const ELECTION: &str = "/my/election";
const TTL: Duration = Duration::from_secs(5);
/// Kept back from the TTL for clock drift and work in flight.
const MARGIN: Duration = Duration::from_secs(1);
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);

/// What the service does while it leads.
pub trait Leader {
    fn elected(&self, term: i64);
    fn work(&self, term: i64) -> impl Future<Output = ()>;
    fn stepped_down(&self, term: i64, reason: &str);
}

/// Campaigns, leads with the election's revision as the fencing token, steps down. `careful`:
/// stop leading once the lease may have expired by this node's clock (one TTL minus a margin
/// after the last answered keepalive was sent); otherwise lead for as long as it runs.
pub async fn lead(
    endpoints: Vec<String>,
    name: String,
    careful: bool,
    leader: impl Leader,
) -> Result<(), etcd_client::Error> {
    let mut client = Client::connect(&endpoints, None).await?;
    let renewed = Arc::new(Mutex::new(Instant::now()));
    let lease = client.lease_grant(TTL.as_secs() as i64, None).await?.id();
    // Renew from a task of its own, while campaigning too: a candidate whose lease lapses while
    // it waits in `campaign` loses its place.
    let keepalives = task::spawn(keep_alive(client.clone(), lease, renewed.clone()));
    let key = client.campaign(ELECTION, name, lease).await?.take_leader().expect("a campaign answers its key");
    let term = key.rev();
    leader.elected(term);
    let reason = loop {
        let deadline = *renewed.lock().unwrap() + TTL - MARGIN;
        if careful && Instant::now() >= deadline {
            break "lease may have expired";
        }
        leader.work(term).await;
    };
    leader.stepped_down(term, reason);
    keepalives.abort();
    let _ = client.resign(Some(ResignOptions::new().with_leader(key))).await;
    Ok(())
}

/// One keepalive a second, each on a stream of its own, so a late answer is never credited to a
/// later keepalive; `renewed` is the send time of the newest one answered.
async fn keep_alive(mut client: Client, lease: i64, renewed: Arc<Mutex<Instant>>) {
    loop {
        let sent = Instant::now();
        if let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await
            && keeper.keep_alive().await.is_ok()
            && let Ok(Ok(Some(answer))) = time::timeout(KEEPALIVE_EVERY, answers.message()).await
        {
            if answer.ttl() <= 0 {
                return; // the lease is gone
            }
            *renewed.lock().unwrap() = sent;
        }
        time::sleep_until(sent + KEEPALIVE_EVERY).await;
    }
}

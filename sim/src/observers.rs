//! Observers (`[observers]`): one host that watches the lock's keys and does nothing else, the
//! load of a watch storm. A dashboard showing who holds the lock, a router sending work to the
//! holder, every pod of a deployment watching one configuration key: N watches of one key, each
//! notified of every change.
//!
//! Without a proxy the host keeps `count` watches on the servers, as `count` clients each
//! opening its own would (Kubernetes components before the API server's watch cache). With one
//! (etcd's gRPC proxy merges the client watches of one key or range into one watch on the
//! cluster; Kubernetes' watch cache does the same), the servers see a single watch and the proxy
//! hands each event to its `count` watchers itself, which costs the servers nothing and is not
//! modelled further. The observers record nothing: what a storm does shows in the lock clients'
//! histories (see `cluster.watch_event_cost`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::clock::Clock;
use crate::store::{KeyRange, Revision, StoreError};

/// How long one watch long-poll waits on the server for changes.
const POLL: Duration = Duration::from_millis(500);
/// How long a watch waits before polling again when no server answered.
const RETRY: Duration = Duration::from_millis(100);

/// The observers' host.
#[derive(Clone, Debug)]
pub struct ObserversPlan {
    pub addr: SocketAddr,
    pub servers: Vec<(u64, SocketAddr)>,
    pub start: Instant,
    /// The watched prefix: the lock's name and a `/`.
    pub prefix: String,
    /// Watches on the servers: `count`, or 1 through a proxy.
    pub watches: usize,
}

/// Runs the host's watches until the run ends.
pub async fn run_observers(plan: ObserversPlan, clock: Clock) {
    madsim::time::sleep_until(plan.start).await;
    let client =
        Client::connect(plan.addr, plan.servers.clone(), clock).await.expect("the observers bind their address");
    let range = KeyRange::Prefix(plan.prefix.clone());
    // One connection for all of them, as one host multiplexes its watches on one gRPC stream.
    for _ in 1..plan.watches {
        madsim::task::spawn(follow(client.clone(), range.clone()));
    }
    follow(client, range).await;
}

/// One watch: from the first revision, every change to `range`, resumed where it stopped.
async fn follow(client: Client, range: KeyRange) {
    let mut from: Revision = 1;
    loop {
        match client.watch_once(range.clone(), from, POLL).await {
            Ok(Ok(batch)) => {
                from = match batch.events.last() {
                    Some(last) => last.kv.mod_revision + 1,
                    None => from.max(batch.header_revision + 1),
                };
            }
            Ok(Err(StoreError::Compacted { compact_revision, .. })) => from = compact_revision,
            Ok(Err(_)) | Err(_) => client.clock().sleep(RETRY).await,
        }
    }
}

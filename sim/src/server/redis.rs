//! One Redis server of an independent cluster (`cluster.kind = "independent"`): no replication,
//! no consensus; it answers the Redlock recipe's two commands from its own keyspace
//! ([`crate::redis::Keyspace`]) by its own wall clock.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::net::Endpoint;

use crate::clock::Clock;
use crate::recorder::Recorder;
use crate::redis::Keyspace;
use crate::rpc::RedisRequest;

/// How often the server runs its periodic work (Redis's `hz 10`: `serverCron` ten times a second).
const CRON_INTERVAL: Duration = Duration::from_millis(100);

/// The server's wall clock in ms, as Redis's `mstime()` reads it.
fn wall_ms(clock: &Clock) -> i64 {
    clock.wall_now().0.div_euclid(1_000_000)
}

/// Serves `addr` until the node dies. `keyspace` lives outside the node, as its disk does: a
/// crash keeps only what was persisted ([`Keyspace::crash`]).
pub async fn serve_redis(addr: SocketAddr, keyspace: Arc<Mutex<Keyspace>>, clock: Clock, recorder: Recorder) {
    keyspace.lock().expect("keyspace lock poisoned").started(wall_ms(&clock));
    let endpoint = Endpoint::bind(addr).await.expect("a server binds its own address");
    {
        let (keyspace, clock, recorder) = (keyspace.clone(), clock.clone(), recorder.clone());
        endpoint.add_rpc_handler(move |request: RedisRequest| {
            recorder.served_request();
            let now_ms = wall_ms(&clock);
            let mut keys = keyspace.lock().expect("keyspace lock poisoned");
            let answer = match request {
                RedisRequest::SetNxPx { key, value, ttl_ms } => keys.set_nx_px(&key, &value, ttl_ms, now_ms),
                RedisRequest::DeleteIfValue { key, value } => keys.delete_if_value(&key, &value, now_ms),
            };
            async move { answer }
        });
    }
    loop {
        clock.sleep(CRON_INTERVAL).await;
        keyspace.lock().expect("keyspace lock poisoned").cron(wall_ms(&clock));
    }
}

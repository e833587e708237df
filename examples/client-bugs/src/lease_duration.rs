//! Kubernetes issue 47671 (fixed by PR 114872): client-go's LeaderElector decided that the
//! leader's lease had expired by its *own* configured LeaseDuration, not the one the leader wrote
//! in the lock record. A candidate configured with 10 s takes the lock from a leader configured
//! with 30 s (renewing every 12 s) while that leader still leads: two leaders until the old one's
//! next renewal fails. The fix reads the lease duration from the record.
//!
//! The election as client-go runs it, on an etcd key instead of a Lease object: the record holds
//! the holder and its lease duration; candidates watch it change (by its mod revision) on their
//! own clocks; every write is a compare-and-swap on the revision they observed.

use std::time::Duration;

use crate::Effects;
use crate::etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use crate::time::{self, Instant};

pub const RECORD: &str = "/k8s/leader";

/// A candidate's configuration (client-go's LeaderElectionConfig).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// Runs one candidate for ever. `fixed`: judges the leader's lease by the duration in the record.
pub async fn run(endpoints: Vec<String>, name: String, config: Config, fixed: bool, effects: impl Effects) {
    let Ok(mut client) = Client::connect(&endpoints, None).await else { return };
    // What this candidate last saw of the record, and when by its own clock.
    let mut observed: Option<(i64, Instant)> = None;
    let mut leading: Option<(i64, Instant)> = None; // (token, last successful renewal)
    loop {
        let record = client.get(RECORD, None).await.ok().and_then(|got| got.kvs().first().cloned());
        let now = Instant::now();
        match (&record, leading) {
            (Some(kv), Some((token, renewed))) => {
                let ours = kv.value_str().is_ok_and(|v| v.starts_with(&format!("{name}|")));
                let renewed_now = ours && cas(&mut client, kv.mod_revision(), &name, config).await.is_some();
                if renewed_now {
                    leading = Some((token, Instant::now()));
                } else if !ours || now.duration_since(renewed) >= config.renew_deadline {
                    effects.released(RECORD, token, if ours { "renew deadline passed" } else { "lost the lock" });
                    leading = None;
                }
            }
            (None, _) => {
                if let Some(token) = cas(&mut client, 0, &name, config).await {
                    effects.holding(RECORD, token);
                    leading = Some((token, Instant::now()));
                }
            }
            (Some(kv), None) => {
                let revision = kv.mod_revision();
                if observed.is_none_or(|(seen, _)| seen != revision) {
                    observed = Some((revision, now));
                }
                let recorded = kv.value_str().ok().and_then(|v| v.split('|').nth(1)?.parse::<u64>().ok());
                let duration = match (fixed, recorded) {
                    (true, Some(ms)) => Duration::from_millis(ms),
                    _ => config.lease_duration,
                };
                let (_, since) = observed.expect("just set");
                if now.duration_since(since) > duration
                    && let Some(token) = cas(&mut client, revision, &name, config).await
                {
                    effects.holding(RECORD, token);
                    leading = Some((token, Instant::now()));
                }
            }
        }
        if let Some((token, _)) = leading {
            effects.write(token, format!("{name}-{token}")).await;
        }
        time::sleep(config.retry_period).await;
    }
}

/// Writes the record as `name`'s if its mod revision is still `revision` (0: absent); the new
/// mod revision on success. A renewal keeps the token the candidate took the lock with.
async fn cas(client: &mut Client, revision: i64, name: &str, config: Config) -> Option<i64> {
    let value = format!("{name}|{}", config.lease_duration.as_millis());
    let guard = match revision {
        0 => Compare::create_revision(RECORD, CompareOp::Equal, 0),
        _ => Compare::mod_revision(RECORD, CompareOp::Equal, revision),
    };
    let txn = Txn::new().when([guard]).and_then([TxnOp::put(RECORD, value, None)]);
    let answer = client.txn(txn).await.ok()?;
    answer.succeeded().then(|| answer.header().map_or(0, |h| h.revision()))
}

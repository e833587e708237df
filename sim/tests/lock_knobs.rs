//! The `[lock]` knobs of the seed pitfalls, on a live cluster: a lock entry that outlives its
//! session (`lease = false`, `ephemeral = false`) and keepalives sent only between holds
//! (`keepalive = "between-holds"`).

use std::time::Duration;

use coordsim_sim::client::zk::ZkClient;
use coordsim_sim::client::{Client, EtcdLockConfig, Session, SessionEnd, lock, lock_zk};
use coordsim_sim::recipe::zk_lock::ZkLockConfig;
use coordsim_sim::recorder::Recorder;
use coordsim_sim::rpc::ClientReply;
use coordsim_sim::scenario::{EntryLifetime, KeepAliveMode};
use coordsim_sim::store::{KeyRange, RangeRequest};
use coordsim_sim::testbed;

const TTL_MS: u64 = 2000;
const BUDGET: Duration = Duration::from_secs(3);

async fn session(client: &Client, recorder: &Recorder, node: &str, keepalive: KeepAliveMode) -> Session {
    Session::open(client, recorder, node, TTL_MS, None, false, keepalive).await.expect("a session opens")
}

/// Takes a lock with `lifetime` on etcd (c1, c2) or ZooKeeper (c3, c4), then drops the session
/// as a crash would (no more keepalives, no unlock) and says whether the lock's entry is still
/// there two TTLs later.
fn entry_survives(lifetime: EntryLifetime, zookeeper: bool, node: &'static str) -> testbed::Script<bool> {
    testbed::script(move |client: Client, recorder: Recorder| async move {
        let session = session(&client, &recorder, node, KeepAliveMode::Background).await;
        let name = format!("/locks/{node}");
        let zk = ZkClient::new(&client, session.lease);
        let (entry, _) = match zookeeper {
            true => {
                let config = ZkLockConfig { lifetime, ..ZkLockConfig::QUEUE };
                lock_zk(&zk, &session, &recorder, node, &name, config).await
            }
            false => {
                lock(&client, &session, &recorder, node, &name, EtcdLockConfig { lifetime, ..EtcdLockConfig::MUTEX })
                    .await
            }
        }
        .expect("an uncontended lock is granted");
        drop(session);
        madsim::time::sleep(Duration::from_millis(2 * TTL_MS)).await;
        match zookeeper {
            true => zk.exists(&entry, BUDGET).await.expect("a read").0.is_some(),
            false => {
                let read = client.range(RangeRequest::new(KeyRange::Key(entry)), BUDGET).await;
                !read.expect("a read").expect("a range").kvs.is_empty()
            }
        }
    })
}

#[test]
fn a_lock_entry_attached_to_its_session_goes_with_it_and_a_persistent_one_stays() {
    let scripts = vec![
        entry_survives(EntryLifetime::Session, false, "c1"),
        entry_survives(EntryLifetime::Persistent, false, "c2"),
        entry_survives(EntryLifetime::Session, true, "c3"),
        entry_survives(EntryLifetime::Persistent, true, "c4"),
    ];
    let survived = testbed::run(1, 3, scripts, Duration::from_secs(60));
    assert_eq!(survived, [false, true, false, true], "etcd lease / no lease, ZooKeeper ephemeral / persistent");
}

/// Opens a session with `mode`, holds for twice the TTL, then says whether the lease was alive
/// at the end of the hold, whether the session knew of its end by then, and how it ended one
/// TTL after the hold.
fn long_hold(mode: KeepAliveMode, node: &'static str) -> testbed::Script<(bool, bool, Option<SessionEnd>)> {
    testbed::script(move |client: Client, recorder: Recorder| async move {
        let session = session(&client, &recorder, node, mode).await;
        session.hold_started();
        madsim::time::sleep(Duration::from_millis(2 * TTL_MS)).await;
        let alive = matches!(client.time_to_live(session.lease, false, BUDGET).await, Ok(ClientReply::LeaseTtl { .. }));
        let known = session.ended().is_some();
        session.hold_ended();
        madsim::time::sleep(Duration::from_millis(TTL_MS)).await;
        (alive, known, session.ended())
    })
}

#[test]
fn keepalives_between_holds_let_a_long_hold_outlive_the_lease_and_background_ones_do_not() {
    let scripts = vec![long_hold(KeepAliveMode::Background, "c1"), long_hold(KeepAliveMode::BetweenHolds, "c2")];
    let results = testbed::run(1, 3, scripts, Duration::from_secs(60));
    assert_eq!(results[0], (true, false, None), "renewed in the background through the hold");
    // The lease expired under the hold, and the busy client learns it only when it renews again.
    assert_eq!(results[1], (false, false, Some(SessionEnd::LeaseGone)), "evicted under its own hold");
}

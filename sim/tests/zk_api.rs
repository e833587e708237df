//! The ZooKeeper view over the wire: three servers, scripted clients, each connected to one
//! server (reads served there, writes forwarded to the leader).

use std::time::Duration;

use coordsim_sim::client::zk::{ZkCallError, ZkClient};
use coordsim_sim::store::{Command, CommandResponse, RevokeReason};
use coordsim_sim::testbed;
use coordsim_sim::zk::{ANY_VERSION, CreateMode, EventType, WatchKind, ZkError};

const BUDGET: Duration = Duration::from_secs(3);

#[test]
fn a_client_reads_its_own_writes_and_a_watch_sees_the_next_change() {
    let script = |client, _| async move {
        let zk = ZkClient::new(&client, 0);
        zk.create("/app", "v0", CreateMode::Persistent).await.unwrap();
        let ((data, stat), _) = zk.get_data("/app", BUDGET).await.unwrap();
        assert_eq!((data.as_str(), stat.version), ("v0", 0), "read your writes on any server");
        let (seq, _) = zk.create("/app/job-", "", CreateMode::PersistentSequential).await.unwrap();
        assert_eq!(seq, "/app/job-0000000000");
        let (children, zxid) = zk.get_children("/app", BUDGET).await.unwrap();
        assert_eq!(children, vec!["job-0000000000".to_string()]);
        // A child watch armed at `zxid` fires on the next child change, and only once per poll.
        zk.create("/app/job-", "", CreateMode::PersistentSequential).await.unwrap();
        let (events, _) = zk.poll_watch("/app", WatchKind::Children, zxid, Duration::from_secs(1)).await.unwrap();
        assert_eq!(events.first().map(|e| e.kind), Some(EventType::NodeChildrenChanged));
        let stale = zk.set_data("/app", "v1", 7).await;
        assert!(matches!(stale, Err(ZkCallError::Zk(ZkError::BadVersion { .. }))), "{stale:?}");
        zk.set_data("/app", "v1", 0).await.unwrap();
        let busy = zk.delete("/app", ANY_VERSION).await;
        assert!(matches!(busy, Err(ZkCallError::Zk(ZkError::NotEmpty(_)))), "{busy:?}");
        zk.sync(BUDGET).await.unwrap() >= zxid
    };
    for seed in 1..=3 {
        assert_eq!(testbed::run(seed, 3, vec![testbed::script(script)], Duration::from_secs(30)), vec![true]);
    }
}

#[test]
fn an_ephemeral_node_goes_with_its_session_and_another_client_sees_it_go() {
    let owner = |client: coordsim_sim::client::Client, _| async move {
        let budget = Duration::from_secs(3);
        let CommandResponse::LeaseGrant { id, .. } =
            client.write(Command::LeaseGrant { id: 0, ttl_ms: 2000 }, budget).await.unwrap()
        else {
            panic!("grant failed")
        };
        let zk = ZkClient::new(&client, id);
        zk.create("/member", "c1", CreateMode::Ephemeral).await.unwrap();
        madsim::time::sleep(Duration::from_secs(1)).await;
        // The session ends (as an expiry would end it).
        client.write(Command::LeaseRevoke { id, reason: RevokeReason::Client }, budget).await.unwrap();
        let expired = zk.create("/again", "", CreateMode::Ephemeral).await;
        matches!(expired, Err(ZkCallError::Zk(ZkError::SessionExpired(_))))
    };
    let watcher = |client, _| async move {
        let zk = ZkClient::new(&client, 0);
        // Wait for the member, then watch it until it is gone.
        let zxid = loop {
            let (stat, zxid) = zk.exists("/member", BUDGET).await.unwrap();
            if let Some(stat) = stat {
                assert_ne!(stat.ephemeral_owner, 0);
                break zxid;
            }
            madsim::time::sleep(Duration::from_millis(50)).await;
        };
        loop {
            let (events, _) = zk.poll_watch("/member", WatchKind::Data, zxid, Duration::from_secs(1)).await.unwrap();
            if let Some(event) = events.first() {
                return event.kind == EventType::NodeDeleted;
            }
        }
    };
    let results = testbed::run(7, 3, vec![testbed::script(owner), testbed::script(watcher)], Duration::from_secs(30));
    assert_eq!(results, vec![true, true]);
}

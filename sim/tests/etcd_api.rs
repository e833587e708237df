//! etcd's lease and watch APIs over the wire: TimeToLive with keys, Leases, watch options.

use std::time::Duration;

use coordsim_sim::client::Client;
use coordsim_sim::rpc::{ClientReply, WatchOptions};
use coordsim_sim::store::{Command, CommandResponse, DeleteRangeRequest, EventKind, KeyRange, PutRequest};
use coordsim_sim::testbed;

const BUDGET: Duration = Duration::from_secs(3);

fn put(key: &str, value: &str, lease: i64) -> Command {
    Command::Put(PutRequest { key: key.into(), value: value.into(), lease, prev_kv: false, ignore_lease: false })
}

#[test]
fn time_to_live_counts_down_and_lists_the_keys() {
    let script = |client: Client, _| async move {
        let CommandResponse::LeaseGrant { id, .. } =
            client.write(Command::LeaseGrant { id: 0, ttl_ms: 5000 }, BUDGET).await.unwrap()
        else {
            panic!("grant")
        };
        client.write(put("/a", "1", id), BUDGET).await.unwrap();
        client.write(put("/b", "2", id), BUDGET).await.unwrap();
        madsim::time::sleep(Duration::from_secs(2)).await;
        let ClientReply::LeaseTtl { granted_ttl_ms, remaining_ms, keys, .. } =
            client.time_to_live(id, true, BUDGET).await.unwrap()
        else {
            panic!("no ttl")
        };
        assert_eq!(granted_ttl_ms, 5000);
        assert!((2500..=3100).contains(&remaining_ms), "about 3 s left after 2 s: {remaining_ms}");
        assert_eq!(keys, vec!["/a".to_string(), "/b".to_string()]);
        let listed = client.leases(BUDGET).await.unwrap();
        madsim::time::sleep(Duration::from_secs(4)).await;
        let gone = client.time_to_live(id, false, BUDGET).await.unwrap();
        (listed == vec![id], matches!(gone, ClientReply::LeaseNotFound))
    };
    assert_eq!(testbed::run(1, 3, vec![testbed::script(script)], Duration::from_secs(30)), vec![(true, true)]);
}

#[test]
fn watch_options_filter_events_and_attach_previous_values() {
    let script = |client: Client, _| async move {
        let CommandResponse::Put(first) = client.write(put("/w", "1", 0), BUDGET).await.unwrap() else { panic!() };
        client.write(put("/w", "2", 0), BUDGET).await.unwrap();
        let delete = DeleteRangeRequest { range: KeyRange::Key("/w".into()), prev_kv: false };
        client.write(Command::DeleteRange(delete), BUDGET).await.unwrap();
        let from = first.header.revision;
        let wait = Duration::from_millis(200);
        let only_deletes = WatchOptions { no_put: true, ..WatchOptions::default() };
        let batch = client.watch_with(KeyRange::Key("/w".into()), from, wait, only_deletes).await.unwrap().unwrap();
        let kinds: Vec<EventKind> = batch.events.iter().map(|e| e.kind).collect();
        let with_prev = WatchOptions { prev_kv: true, no_delete: true, ..WatchOptions::default() };
        let batch = client.watch_with(KeyRange::Key("/w".into()), from, wait, with_prev).await.unwrap().unwrap();
        let prevs: Vec<Option<String>> =
            batch.events.iter().map(|e| e.prev_kv.as_ref().map(|kv| kv.value.clone())).collect();
        (kinds, prevs)
    };
    let results = testbed::run(2, 3, vec![testbed::script(script)], Duration::from_secs(30));
    assert_eq!(results[0].0, vec![EventKind::Delete]);
    assert_eq!(results[0].1, vec![None, Some("1".to_string())], "puts only, each with the value before it");
}

/// Every member serves a client that knows only it, as etcd's do (a follower forwards a proposal
/// to the leader, asks it for the read index, relays a keepalive to its lessor): a put through
/// each member, then its value read back from that member alone, serializably (the member
/// answered the put once it had applied it), and linearizably; the lease kept alive and its TTL
/// read through that member.
#[test]
fn every_member_serves_a_client_that_knows_only_that_member() {
    use coordsim_sim::store::{RangeRequest, StoreError};
    let script = |client: Client, _| async move {
        let mut served = Vec::new();
        for member in 1..=3u64 {
            let mut local = client.endpoint().local_addr();
            local.set_port(7000 + member as u16);
            let servers = vec![(member, testbed::addr(member))];
            let alone = Client::connect(local, servers, client.clock().clone()).await.unwrap();
            let CommandResponse::LeaseGrant { id, .. } =
                alone.write(Command::LeaseGrant { id: 0, ttl_ms: 5000 }, BUDGET).await.unwrap()
            else {
                panic!("grant through s{member}")
            };
            let key = format!("/m{member}");
            alone.write(put(&key, "v", id), BUDGET).await.unwrap();
            let read = |linearizable| {
                let alone = alone.clone();
                let key = key.clone();
                async move {
                    let request = RangeRequest::new(KeyRange::Key(key));
                    let found: Result<_, StoreError> = alone.range_any(request, linearizable, BUDGET).await.unwrap();
                    found.unwrap().kvs.into_iter().map(|kv| kv.value).collect::<Vec<_>>()
                }
            };
            let (local_read, linearizable_read) = (read(false).await, read(true).await);
            let kept = alone.keep_alive(id, BUDGET).await.unwrap();
            let ttl = alone.time_to_live(id, true, BUDGET).await.unwrap();
            served.push((
                local_read == ["v"],
                linearizable_read == ["v"],
                matches!(kept, ClientReply::KeptAlive { ttl_ms: 5000 }),
                matches!(ttl, ClientReply::LeaseTtl { keys, .. } if keys == [key.clone()]),
            ));
        }
        served
    };
    let served = testbed::run(1, 3, vec![testbed::script(script)], Duration::from_secs(30));
    assert_eq!(served, vec![vec![(true, true, true, true); 3]]);
}

/// A proposal that waits etcd's request timeout (5 s plus twice the election timeout, 150 ms
/// here) is answered "request timed out", as etcd's `processInternalRaftRequestOnce` answers:
/// the leader cut from both followers cannot commit, and a client that gives the call 20 s hears
/// at 5.3 s. (Before, the member held the call until the client gave up.)
#[test]
fn a_proposal_that_cannot_commit_is_answered_request_timed_out_after_etcds_request_timeout() {
    use coordsim_sim::net;
    use coordsim_sim::rpc::ClientRequest;
    let script = |client: Client, _| async move {
        let leader = testbed::server_node(1);
        for follower in [2, 3] {
            net::clog_link(leader, testbed::server_node(follower));
            net::clog_link(testbed::server_node(follower), leader);
        }
        let start = std::time::Instant::now();
        let reply = client
            .endpoint()
            .call(testbed::addr(1), ClientRequest::Write(put("/k", "v", 0)), Duration::from_secs(20))
            .await
            .unwrap();
        (reply, start.elapsed())
    };
    let results = testbed::run(1, 3, vec![testbed::script(script)], Duration::from_secs(40));
    let (reply, waited) = &results[0];
    assert!(
        matches!(reply, ClientReply::Unavailable { reason } if reason == "etcdserver: request timed out"),
        "{reply:?}"
    );
    assert!((Duration::from_millis(5300)..Duration::from_millis(5320)).contains(waited), "{waited:?}");
}

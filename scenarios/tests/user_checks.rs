//! The checks users' bugs needed, on user code through the etcd API: each property catches a
//! public client bug that every other built-in property passes, and passes its fix.
//! - `session_loss_notice`, etcd issue 19597: a waiter in `lock` whose lease expires learns it
//!   only when the holder releases; the fix gives the request up once a keepalive says the lease
//!   is gone (the history records the request given up then).
//! - `watch_continuity`, etcd issue 11496: a consumer that re-creates its watch "from now" after
//!   its stream ended misses what changed in between; the fix re-lists the prefix and watches
//!   from after that read.

use coordsim::etcd::{Client, Error, GetOptions, LockOptions, WatchOptions};
use coordsim::prelude::*;

/// Every verdict of `run` but `property` and the informational ones passes.
fn only_fails(run: &Run, property: &str) {
    for outcome in &run.summary.outcomes {
        let id = outcome.report.property.as_str();
        let expected = if id == property { Verdict::Fail } else { Verdict::Pass };
        assert_eq!(outcome.report.verdict, expected, "{id}: {}", outcome.report.summary);
    }
}

// -- etcd issue 19597 ----------------------------------------------------------------------------

const LOCK: &str = "/jobs/lock";

/// c1 takes the lock and holds it for 20 s. c2 asks for it under a 3 s lease and keeps the lease
/// alive from a task of its own; c2 is paused from 4 s to 9 s, so its lease expires while it
/// waits. `gives_up`: c2 ends its request as soon as a keepalive answers that the lease is gone.
fn waiter(name: &str, gives_up: bool) -> Testbed {
    Testbed::new(name)
        .servers(3)
        .duration(Duration::from_secs(30))
        .client_start(Duration::from_secs(1), Duration::from_millis(500))
        .fault(Fault::pause("c2").at(Duration::from_secs(4)).lasting(Duration::from_secs(5)))
        .clients(2, move |ctx| async move {
            let Ok(mut client) = ctx.etcd().await else { return };
            let Ok(lease) = client.lease_grant(3, None).await.map(|g| g.id()) else { return };
            let lost = keep_alive(client.clone(), lease);
            if ctx.name() == "c1" {
                if let Ok(held) = client.lock(LOCK, Some(LockOptions::new().with_lease(lease))).await {
                    let token = held.header().map_or(0, |h| h.revision());
                    ctx.believe_held(LOCK, token);
                    sleep(Duration::from_secs(20)).await;
                    ctx.believe_released(LOCK, token, "done");
                    let _ = client.unlock(held.key()).await;
                }
                let _ = client.lease_revoke(lease).await;
                return;
            }
            let request = client.lock(LOCK, Some(LockOptions::new().with_lease(lease)));
            if gives_up {
                // The request's future is dropped once the lease is known gone.
                let _ = timeout(Duration::from_secs(60), async {
                    futures_first(request, lost).await;
                })
                .await;
            } else {
                let _ = request.await;
            }
        })
}

/// Keeps `lease` alive every second; the returned future ends once a keepalive answers that the
/// lease is gone.
fn keep_alive(mut client: Client, lease: i64) -> impl std::future::Future<Output = ()> {
    let (gone_tx, gone_rx) = futures_oneshot();
    spawn(async move {
        let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
        loop {
            if keeper.keep_alive().await.is_err() {
                return;
            }
            if let Ok(Ok(Some(answer))) = timeout(Duration::from_secs(1), answers.message()).await
                && answer.ttl() <= 0
            {
                let _ = gone_tx.send(());
                return;
            }
            sleep(Duration::from_secs(1)).await;
        }
    });
    async move {
        let _ = gone_rx.await;
    }
}

fn futures_oneshot() -> (futures::channel::oneshot::Sender<()>, futures::channel::oneshot::Receiver<()>) {
    futures::channel::oneshot::channel()
}

/// Runs `a` until `b` finishes first.
async fn futures_first<A: std::future::Future, B: std::future::Future>(a: A, b: B) {
    let (a, b) = (std::pin::pin!(a), std::pin::pin!(b));
    futures::future::select(a, b).await;
}

#[test]
fn session_loss_notice_catches_a_waiter_that_learns_its_lease_is_gone_only_at_the_release() {
    let run = waiter("etcd-19597-waiter", false).run_seed(1);
    only_fails(&run, "session_loss_notice");
    let report = &run.summary.outcomes.iter().find(|o| o.report.property == "session_loss_notice").unwrap().report;
    assert!(report.findings[0].message.contains("c2's lock request for /jobs/lock"), "{report:?}");
}

#[test]
fn session_loss_notice_passes_a_waiter_that_gives_up_when_its_lease_is_gone() {
    let sweep = waiter("etcd-19597-waiter-gives-up", true).check(1..=20);
    let run = sweep.runs[0].1.as_ref().unwrap();
    let report = &run.summary.outcomes.iter().find(|o| o.report.property == "session_loss_notice").unwrap().report;
    assert!(report.summary.starts_with("1 lock requests were waiting"), "{}", report.summary);
}

// -- etcd issue 11496 ----------------------------------------------------------------------------

const PREFIX: &str = "/cfg/";

/// c1 writes a key under /cfg/ every 100 ms and compacts the history to 5 revisions back every
/// second. c2 consumes every change under /cfg/ through a watch; c2 is paused from 5 s to 8 s, so
/// its stream ends compacted. `relists`: c2 reads the prefix and watches from after that read;
/// otherwise it watches again "from now".
fn consumer(name: &str, relists: bool) -> Testbed {
    Testbed::new(name)
        .servers(3)
        .duration(Duration::from_secs(20))
        .client_start(Duration::from_secs(1), Duration::from_millis(200))
        .fault(Fault::pause("c2").at(Duration::from_secs(5)).lasting(Duration::from_secs(3)))
        .clients(2, move |ctx| async move {
            let Ok(mut client) = ctx.etcd().await else { return };
            if ctx.name() == "c1" {
                for i in 0u64.. {
                    if let Ok(put) = client.put(format!("{PREFIX}k{}", i % 7), format!("v{i}"), None).await
                        && i % 10 == 9
                    {
                        let revision = put.header().map_or(0, |h| h.revision());
                        let _ = client.compact(revision - 5, None).await;
                    }
                    sleep(Duration::from_millis(100)).await;
                }
            }
            let _ = consume(client, relists).await;
        })
}

async fn consume(mut client: Client, relists: bool) -> Result<(), Error> {
    let mut from = 0; // the first stream: from now
    loop {
        let options = WatchOptions::new().with_prefix().with_start_revision(from);
        let mut stream = client.watch(PREFIX, Some(options)).await?;
        while let Some(answer) = stream.message().await? {
            if answer.canceled() {
                break;
            }
            for event in answer.events() {
                from = event.kv().map_or(from, |kv| kv.mod_revision() + 1);
            }
        }
        from = if relists {
            let state = client.get(PREFIX, Some(GetOptions::new().with_prefix())).await?;
            state.header().map_or(0, |h| h.revision() + 1)
        } else {
            0 // etcd 11496: "from now", past whatever changed since the stream ended
        };
    }
}

#[test]
fn watch_continuity_catches_a_consumer_that_watches_again_from_now() {
    let run = consumer("etcd-11496-consumer", false).run_seed(1);
    only_fails(&run, "watch_continuity");
    let report = &run.summary.outcomes.iter().find(|o| o.report.property == "watch_continuity").unwrap().report;
    assert!(report.findings[0].message.contains("c2's watch on /cfg/* never saw revision"), "{report:?}");
}

#[test]
fn watch_continuity_passes_a_consumer_that_re_lists_before_it_watches_again() {
    let sweep = consumer("etcd-11496-consumer-relists", true).check(1..=20);
    let run = sweep.runs[0].1.as_ref().unwrap();
    let report = &run.summary.outcomes.iter().find(|o| o.report.property == "watch_continuity").unwrap().report;
    assert!(report.summary.contains("1 of them a consumer's re-created watch"), "{}", report.summary);
}

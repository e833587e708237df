//! The cost of running code through `coordsim::etcd` and the Testbed against the built-in recipe
//! drivers, on the same scenario: `etcd-election-gc-pause` (3 servers, 3 candidates on etcd's
//! Election service, 3 s leases, 4 s holds with 4 fenced writes, c1 paused 2 s..12 s, 20 s).
//! The Testbed side is that workload written against the etcd-client API.
//!
//! `cargo bench -p leader-service --bench api_overhead`

use std::time::Duration;

use coordsim::testbed::{Ctx, Fault, Testbed};
use criterion::{Criterion, criterion_group, criterion_main};

const NAME: &str = "/election/service";

/// One candidate: a session kept alive every TTL/3, campaign, 4 writes over 4 s, resign, think.
async fn candidate(ctx: Ctx) {
    let Ok(mut client) = ctx.etcd().await else { return };
    let Ok(lease) = client.lease_grant(3, None).await else { return };
    let lease = lease.id();
    let Ok((mut keeper, mut answers)) = client.lease_keep_alive(lease).await else { return };
    madsim::task::spawn(async move {
        loop {
            coordsim::time::sleep(Duration::from_secs(1)).await;
            if keeper.keep_alive().await.is_err() {
                return;
            }
        }
    });
    madsim::task::spawn(async move { while let Ok(Some(_)) = answers.message().await {} });
    loop {
        let Ok(mut elected) = client.campaign(NAME, ctx.name(), lease).await else { return };
        let leader = elected.take_leader().expect("a leader key");
        ctx.believe_held(NAME, leader.rev());
        for write in 0..4 {
            ctx.write_resource(leader.rev(), format!("{}-{write}", ctx.name())).await;
            ctx.sleep(Duration::from_secs(1)).await;
        }
        ctx.believe_released(NAME, leader.rev(), "resigned");
        let _ = client.resign(Some(coordsim::etcd::ResignOptions::new().with_leader(leader))).await;
        ctx.sleep(Duration::from_millis(500)).await;
    }
}

fn bench(c: &mut Criterion) {
    let loaded = coordsim::load::resolve("etcd-election-gc-pause").expect("a library scenario");
    let testbed = Testbed::new("etcd-election-gc-pause-api")
        .duration(Duration::from_secs(20))
        .client_start(Duration::from_millis(500), Duration::from_millis(300))
        .fault(Fault::pause("c1").at(Duration::from_secs(2)).lasting(Duration::from_secs(10)))
        .clients(3, candidate);
    let mut group = c.benchmark_group("etcd-election-gc-pause");
    group.sample_size(20).measurement_time(Duration::from_secs(20));
    let mut seed = 0;
    group.bench_function("built-in recipe driver", |b| {
        b.iter(|| {
            seed += 1;
            let scenario = loaded.scenario.clone();
            std::thread::spawn(move || coordsim_sim::harness::run(&scenario, seed))
                .join()
                .expect("runs")
                .expect("stays under the entry limit")
        })
    });
    let mut seed = 0;
    group.bench_function("coordsim::etcd through the Testbed", |b| {
        b.iter(|| {
            seed += 1;
            testbed.try_run_seed(seed).expect("runs")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

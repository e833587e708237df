//! The acceptance suite of public client bugs: each broken variant fails the property that names
//! its bug on at least 90 % of 50 seeds, each fixed variant meets every expectation on all 50.
//! Every test prints its figures (`cargo test -p client-bugs -- --nocapture`).

use client_bugs::{
    Effects, latch_suspended, lease_duration, lock_holder_partitioned, stale_unlock, waiter_session, watch_resume,
    watchdog, zombie_controller,
};
use coordsim::prelude::*;

const SEEDS: std::ops::RangeInclusive<u64> = 1..=50;

/// A client's effects, recorded through the Testbed.
#[derive(Clone)]
struct Recorded(Ctx);

impl Effects for Recorded {
    async fn write(&self, token: i64, value: String) -> bool {
        self.0.write_resource(token, value).await == WriteOutcome::Accepted
    }

    fn holding(&self, lock: &str, token: i64) {
        self.0.believe_held(lock, token);
    }

    fn released(&self, lock: &str, token: i64, reason: &str) {
        self.0.believe_released(lock, token, reason);
    }
}

/// The broken variant: `property` fails on at least 90 % of the seeds.
fn caught(testbed: Testbed, property: Property) {
    let name = testbed.scenario().name.clone();
    let sweep = testbed.expect(property, Expectation::Fail).run_seeds(SEEDS);
    let failed = sweep.count(property.id(), Verdict::Fail);
    let example = sweep.runs.iter().find_map(|(seed, run)| {
        let report = &run.as_ref().ok()?.summary.outcomes.iter().find(|o| o.report.property == property.id())?.report;
        Some(format!("seed {seed}: {}", report.findings.first()?.message))
    });
    eprintln!("{name}: {property} failed on {failed} of {} seeds; {}", sweep.runs.len(), example.unwrap_or_default());
    if failed * 10 < sweep.runs.len() * 9 {
        let (seed, run) = sweep
            .runs
            .iter()
            .find(|(_, r)| r.as_ref().is_ok_and(|r| r.verdict(property.id()) != Some(Verdict::Fail)))
            .unwrap();
        let run = run.as_ref().unwrap();
        panic!(
            "{name}: {property} failed on only {failed} of {} seeds; seed {seed}: {:?}",
            sweep.runs.len(),
            run.summary.outcomes.iter().find(|o| o.report.property == property.id()).map(|o| &o.report.summary)
        );
    }
}

/// The broken variant of a bug only `property` can see: it fails on at least 90 % of the seeds,
/// and no other property fails on any seed.
fn caught_alone(testbed: Testbed, property: Property) {
    let name = testbed.scenario().name.clone();
    let sweep = testbed.clone().expect(property, Expectation::Fail).run_seeds(SEEDS);
    for (seed, run) in &sweep.runs {
        let run = run.as_ref().unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
        for outcome in &run.summary.outcomes {
            let other = outcome.report.property != property.id();
            assert!(
                !other || outcome.report.verdict != Verdict::Fail,
                "{name} seed {seed}: {} failed too: {}",
                outcome.report.property,
                outcome.report.summary
            );
        }
    }
    caught(testbed, property);
}

/// The fixed variant: every expectation met on every seed (panics with the first that is not).
fn clean(testbed: Testbed) {
    let name = testbed.scenario().name.clone();
    let sweep = testbed.check(SEEDS);
    eprintln!("{name}: {} of {} seeds as expected", sweep.as_expected(), sweep.runs.len());
}

fn base(name: &str, seconds: u64) -> Testbed {
    Testbed::new(name)
        .servers(3)
        .duration(Duration::from_secs(seconds))
        .client_start(Duration::from_secs(1), Duration::from_millis(300))
}

// etcd issue 19597 ------------------------------------------------------------------------------

fn waiter(fixed: bool) -> Testbed {
    base(if fixed { "etcd-19597-fixed" } else { "etcd-19597" }, 30)
        .fault(Fault::pause("c2").at(Duration::from_secs(4)).lasting(Duration::from_secs(5)))
        .clients(2, move |ctx| async move {
            if ctx.name() == "c1" {
                waiter_session::holder(ctx.endpoints(), Recorded(ctx.clone())).await;
            } else {
                waiter_session::waiter(ctx.endpoints(), fixed).await;
            }
        })
}

#[test]
fn etcd_19597_a_waiter_learns_its_lease_is_gone_only_at_the_release() {
    caught_alone(waiter(false), Property::SessionLossNotice);
}

#[test]
fn etcd_19597_fixed_the_waiter_gives_up_when_its_lease_is_gone() {
    clean(waiter(true));
}

// etcd issue 11496 ------------------------------------------------------------------------------

fn consumer(fixed: bool) -> Testbed {
    base(if fixed { "etcd-11496-fixed" } else { "etcd-11496" }, 20)
        .fault(Fault::pause("c2").at(Duration::from_secs(5)).lasting(Duration::from_secs(3)))
        .clients(2, move |ctx| async move {
            if ctx.name() == "c1" {
                watch_resume::writer(ctx.endpoints()).await;
            } else {
                watch_resume::consumer(ctx.endpoints(), fixed).await;
            }
        })
}

#[test]
fn etcd_11496_a_consumer_watching_again_from_now_misses_changes() {
    caught_alone(consumer(false), Property::WatchContinuity);
}

#[test]
fn etcd_11496_fixed_the_consumer_re_lists_before_it_watches_again() {
    clean(consumer(true));
}

// etcd issue 22082 ------------------------------------------------------------------------------

fn stale_unlock(fixed: bool) -> Testbed {
    // c1's first unlock (about 2 s in) commits but its answer is lost.
    base(if fixed { "etcd-22082-fixed" } else { "etcd-22082" }, 20)
        .fault(
            Fault::drop_replies("c1", ReplyKind::Write)
                .at(Duration::from_millis(1800))
                .lasting(Duration::from_millis(800)),
        )
        .clients(2, move |ctx| async move {
            let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
            stale_unlock::run(endpoints, name, fixed, Recorded(ctx)).await;
        })
}

#[test]
fn etcd_22082_a_stale_unlock_retry_deletes_the_newer_lock() {
    caught(stale_unlock(false), Property::SingleHolder);
}

#[test]
fn etcd_22082_fixed_the_unlock_deletes_only_its_own_grant() {
    clean(stale_unlock(true));
}

// etcd issue 10811 ------------------------------------------------------------------------------

fn partitioned_holder(fixed: bool) -> Testbed {
    base(if fixed { "etcd-10811-fixed" } else { "etcd-10811" }, 30)
        .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
        .clients(3, move |ctx| async move {
            let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
            lock_holder_partitioned::run(endpoints, name, fixed, Recorded(ctx)).await;
        })
}

#[test]
fn etcd_10811_a_partitioned_holder_keeps_working_beside_its_successor() {
    caught(partitioned_holder(false), Property::SingleHolder);
}

#[test]
fn etcd_10811_fixed_the_holder_steps_down_at_its_lease_deadline() {
    clean(partitioned_holder(true));
}

// Redisson issues 3521 and 1626 -----------------------------------------------------------------

fn watchdog(fixed: bool) -> Testbed {
    base(if fixed { "redisson-watchdog-fixed" } else { "redisson-watchdog" }, 30).clients(3, move |ctx| async move {
        let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
        let failing = name == "c1";
        watchdog::run(endpoints, name, failing, fixed, Recorded(ctx)).await;
    })
}

#[test]
fn redisson_a_watchdog_outliving_its_failed_job_holds_the_lock_for_ever() {
    caught(watchdog(false), Property::Progress);
}

#[test]
fn redisson_fixed_the_failed_job_stops_its_watchdog_and_releases_the_lock() {
    clean(watchdog(true));
}

// Kubernetes issue 47671 ------------------------------------------------------------------------

fn lease_duration(fixed: bool) -> Testbed {
    base(if fixed { "kubernetes-47671-fixed" } else { "kubernetes-47671" }, 30).clients(2, move |ctx| async move {
        let (endpoints, name) = (ctx.endpoints(), ctx.name().to_string());
        // c1: client-go's long lease; c2: a short one (both valid configurations).
        let config = if name == "c1" {
            lease_duration::Config {
                lease_duration: Duration::from_secs(30),
                renew_deadline: Duration::from_secs(20),
                retry_period: Duration::from_secs(14),
            }
        } else {
            lease_duration::Config {
                lease_duration: Duration::from_secs(10),
                renew_deadline: Duration::from_secs(8),
                retry_period: Duration::from_secs(2),
            }
        };
        lease_duration::run(endpoints, name, config, fixed, Recorded(ctx)).await;
    })
}

#[test]
fn kubernetes_47671_a_candidate_judging_by_its_own_lease_duration_takes_over_a_live_leader() {
    caught(lease_duration(false), Property::SingleHolder);
}

#[test]
fn kubernetes_47671_fixed_the_candidate_reads_the_leaders_lease_duration() {
    clean(lease_duration(true));
}

// KAFKA-3083 ------------------------------------------------------------------------------------

fn zombie_controller(fixed: bool) -> Testbed {
    let testbed = base(if fixed { "kafka-3083-fixed" } else { "kafka-3083" }, 30)
        .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
        // A zombie believes it leads until it hears of its session's end, with or without the
        // fix: the fix is that its writes are refused.
        .expect(Property::SingleHolder, Expectation::Any)
        .clients(3, move |ctx| async move {
            let (cluster, name) = (ctx.zookeeper_cluster(), ctx.name().to_string());
            zombie_controller::run(cluster, name, fixed, Recorded(ctx)).await;
        });
    // Before the fix the state store took writes of any controller epoch.
    if fixed { testbed } else { testbed.resource(ResourceMode::Unfenced) }
}

#[test]
fn kafka_3083_a_zombie_controller_overwrites_its_successor() {
    caught(zombie_controller(false).expect(Property::Fencing, Expectation::Any), Property::MutualExclusion);
}

#[test]
fn kafka_3083_fixed_writes_are_fenced_by_the_controller_epoch() {
    clean(zombie_controller(true));
}

// CURATOR-460 -----------------------------------------------------------------------------------

fn latch(fixed: bool) -> Testbed {
    base(if fixed { "curator-460-fixed" } else { "curator-460" }, 30)
        .fault(Fault::partition_clients(&["c1"]).at(Duration::from_secs(5)).lasting(Duration::from_secs(10)))
        .clients(3, move |ctx| async move {
            let (cluster, name) = (ctx.zookeeper_cluster(), ctx.name().to_string());
            latch_suspended::run(cluster, name, fixed, Recorded(ctx)).await;
        })
}

#[test]
fn curator_460_a_leader_that_waits_for_lost_leads_beside_its_successor() {
    caught(latch(false), Property::SingleHolder);
}

#[test]
fn curator_460_fixed_suspended_ends_leadership() {
    clean(latch(true));
}

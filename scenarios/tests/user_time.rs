//! coordsim::time, tokio::time's names on the node's local monotonic clock: a client whose clock
//! runs at twice true time sees its timers end after half the true time, and a wall-clock jump
//! moves none of them.

use std::sync::{Arc, Mutex};

use coordsim::prelude::*;
use coordsim::time::{self, MissedTickBehavior};

type Log = Arc<Mutex<Vec<String>>>;

/// Runs `script` on c1 (clock at `rate`) and returns what it noted.
fn run<F, Fut>(rate: f64, script: F) -> Vec<String>
where
    F: Fn(Log) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let log: Log = Arc::default();
    let shared = log.clone();
    let script = Arc::new(script);
    let testbed = Testbed::new("time-api").duration(Duration::from_secs(20)).clock("c1", 0, rate).client(move |_ctx| {
        let (log, script) = (shared.clone(), script.clone());
        async move {
            script(log.clone()).await;
            log.lock().unwrap().push("done".into());
        }
    });
    testbed.try_run_seed(1).expect("the run completes");
    let log = log.lock().unwrap().clone();
    assert_eq!(log.last().map(String::as_str), Some("done"), "the script finished: {log:?}");
    log
}

fn note(log: &Log, line: String) {
    log.lock().unwrap().push(line);
}

/// True time, in ms, as madsim keeps it.
fn true_ms(since: std::time::Instant) -> u128 {
    since.elapsed().as_millis()
}

#[test]
fn timers_run_on_the_nodes_clock_at_its_rate() {
    let log = run(2.0, |log| async move {
        let (start, true_start) = (Instant::now(), std::time::Instant::now());
        sleep(Duration::from_secs(2)).await;
        note(&log, format!("sleep 2 s: local {} ms, true {} ms", start.elapsed().as_millis(), true_ms(true_start)));

        let true_start = std::time::Instant::now();
        let mut ticks = interval(Duration::from_secs(1));
        let first = ticks.tick().await;
        for _ in 0..3 {
            ticks.tick().await;
        }
        let local = Instant::now().duration_since(first).as_millis();
        note(&log, format!("4 ticks of 1 s: local {local} ms, true {} ms", true_ms(true_start)));

        let true_start = std::time::Instant::now();
        let late = time::timeout(Duration::from_millis(500), sleep(Duration::from_secs(5))).await;
        note(&log, format!("timeout 500 ms: {late:?} after true {} ms", true_ms(true_start)));
        let early = time::timeout(Duration::from_secs(5), async { 7 }).await;
        note(&log, format!("in time: {early:?}"));
    });
    assert_eq!(
        log[..4],
        [
            "sleep 2 s: local 2000 ms, true 1000 ms",
            "4 ticks of 1 s: local 3000 ms, true 1500 ms",
            "timeout 500 ms: Err(Elapsed(())) after true 250 ms",
            "in time: Ok(7)",
        ]
    );
}

#[test]
fn an_interval_that_missed_ticks_bursts_delays_or_skips_as_tokios() {
    let log = run(1.0, |log| async move {
        for behavior in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
            let mut ticks = interval(Duration::from_millis(100));
            ticks.set_missed_tick_behavior(behavior);
            let start = ticks.tick().await;
            sleep(Duration::from_millis(350)).await; // misses the ticks at 100, 200 and 300
            // To the nearest 50 ms: madsim wakes a timer a few ms late, at random.
            let round = |d: Duration| (d.as_millis() + 25) / 50 * 50;
            let mut at = Vec::new();
            for _ in 0..3 {
                at.push(round(ticks.tick().await.duration_since(start)));
            }
            let now = round(Instant::now().duration_since(start));
            note(&log, format!("{behavior:?}: ticks {at:?}, done at {now} ms"));
        }
    });
    assert_eq!(
        log[..3],
        [
            "Burst: ticks [100, 200, 300], done at 350 ms",
            "Delay: ticks [100, 450, 550], done at 550 ms",
            "Skip: ticks [100, 400, 500], done at 500 ms",
        ]
    );
}

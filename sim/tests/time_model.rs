//! The time model's driver (`coordsim_sim::timing`) on its own: a server's CPU serves one piece
//! of work at a time in arrival order, and its disk syncs what was written during a sync with
//! the next one (group commit), so N appends during one sync cost two syncs, not N.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coordsim_core::timing::Dist;
use coordsim_sim::timing::{Cpu, Disk};
use madsim::runtime::{Handle, Runtime};

const MS: Duration = Duration::from_millis(1);

/// madsim's own sleep rounds up to 1 ms.
async fn sleep(d: Duration) {
    coordsim_sim::net::sleep_until_exact(Instant::now() + d).await;
}

/// Runs `body` on a node of a fresh simulation; returns what it returns.
fn on_a_node<T: Send + 'static>(
    body: impl FnOnce() -> futures::future::BoxFuture<'static, T> + Send + Sync + Clone + 'static,
) -> T {
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async move {
        let result = Arc::new(Mutex::new(None));
        let slot = result.clone();
        let node = Handle::current().create_node().name("s1").build();
        node.spawn(async move {
            let value = body().await;
            *slot.lock().unwrap() = Some(value);
        })
        .await
        .unwrap();
        let value = result.lock().unwrap().take().expect("the body ran");
        value
    })
}

#[test]
fn the_cpu_serves_one_piece_of_work_at_a_time_in_arrival_order() {
    let finished = on_a_node(|| {
        Box::pin(async {
            let cpu = Arc::new(Cpu::default());
            let start = Instant::now();
            let mut tasks = Vec::new();
            for n in 1..=3u32 {
                let cpu = cpu.clone();
                tasks.push(madsim::task::spawn(async move {
                    cpu.spend(MS * n).await;
                    start.elapsed()
                }));
                // Arrival order is the order `spend` is called in: make it 1, 2, 3.
                sleep(Duration::from_micros(10)).await;
            }
            sleep(Duration::from_micros(100)).await;
            let queued = cpu.queued();
            let mut done = Vec::new();
            for task in tasks {
                done.push(task.await.unwrap());
            }
            (queued, cpu.deepest(), done)
        })
    });
    let (queued, deepest, done) = finished;
    assert_eq!((queued, deepest), (3, 3), "all three wait on the one CPU");
    // 1 ms, then 2 ms after it, then 3 ms after that: 1, 3, 6 ms.
    assert_close(&done, &[MS, MS * 3, MS * 6]);
}

#[test]
fn writes_during_a_sync_share_the_next_sync() {
    let done = on_a_node(|| {
        Box::pin(async {
            let disk = Disk::start(Dist::fixed(MS * 2));
            let start = Instant::now();
            let first = {
                let disk = disk.clone();
                madsim::task::spawn(async move {
                    assert!(disk.sync().await);
                    start.elapsed()
                })
            };
            sleep(Duration::from_micros(500)).await;
            let later: Vec<_> = (0..5)
                .map(|_| {
                    let disk = disk.clone();
                    madsim::task::spawn(async move {
                        assert!(disk.sync().await);
                        start.elapsed()
                    })
                })
                .collect();
            let mut done = vec![first.await.unwrap()];
            for task in later {
                done.push(task.await.unwrap());
            }
            done
        })
    });
    // The first sync runs 0-2 ms; the five writes made at 0.5 ms all go in the sync of 2-4 ms.
    assert_close(&done, &[MS * 2, MS * 4, MS * 4, MS * 4, MS * 4, MS * 4]);
}

/// Equal within 0.1 ms: madsim's scheduler moves time on by a few µs as tasks run.
fn assert_close(got: &[Duration], want: &[Duration]) {
    let close =
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.abs_diff(*w) < Duration::from_micros(100));
    assert!(close, "got {got:?}, want {want:?}");
}

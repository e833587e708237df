//! The client process's workload: the simulator's loop (sim/src/workload.rs) on a real system:
//! open a session, acquire, write to the resource with the fencing token, release, think; a new
//! session when the last one ended. It records beliefs as well as calls.

use std::time::Duration;

use coordsim_checker::history::{Event, Phase};

use crate::config::{ClientConfig, LockConfig};
use crate::journal::Journal;
use crate::resource::ResourceClient;
use crate::session::SessionWatch;

/// Pause before opening a new session after the last one could not be opened or ended.
const SESSION_RETRY: Duration = Duration::from_millis(200);

/// A lock recipe on one real system, with the session it runs under.
// Only our own code implements and calls it, on one thread: no `Send` bounds needed.
#[allow(async_fn_in_trait)]
pub trait LockBackend {
    /// Opens a session (etcd: grants a lease and starts its keepalives; ZooKeeper: connects),
    /// recording it as a `lease_grant` operation.
    async fn open_session(&mut self, journal: &Journal) -> Result<SessionWatch, String>;
    /// Acquires the lock; the holder key and the fencing token. Records the `lock` operation.
    async fn acquire(&mut self, session: &SessionWatch, journal: &Journal) -> Result<(String, i64), String>;
    /// Releases the lock. Records the `unlock` operation.
    async fn release(&mut self, session: &SessionWatch, journal: &Journal, key: &str, token: i64);
    /// Leaves the session behind (its keepalives stop; it expires on the server).
    fn drop_session(&mut self);
}

enum HoldEnd {
    Release,
    SessionEnded,
    Rejected,
}

/// Runs the workload until the task is dropped (the process exits at `stop_ns`).
pub async fn run(config: &ClientConfig, lock: &LockConfig, backend: &mut impl LockBackend, journal: &Journal) {
    sleep_until(journal, config.start_ns).await;
    let mut resource = ResourceClient::new(&lock.resource_name, &lock.resource_addr);
    let mut written = 0u64;
    loop {
        let session = match backend.open_session(journal).await {
            Ok(session) => session,
            Err(_) => {
                tokio::time::sleep(SESSION_RETRY).await;
                continue;
            }
        };
        while session.ended().is_none() {
            let Ok((key, token)) = backend.acquire(&session, journal).await else { break };
            belief(journal, config, lock, token, Phase::Start, None);
            // Nested acquisitions (a recursive caller): free with a reentrant lock; otherwise the
            // recipe is asked again, and its release is a real release.
            if !lock.reentrant {
                for _ in 0..lock.nested {
                    if let Ok((inner, inner_token)) = backend.acquire(&session, journal).await {
                        backend.release(&session, journal, &inner, inner_token).await;
                    }
                }
            }
            let end = hold(config, lock, &session, journal, &mut resource, token, &mut written).await;
            match end {
                HoldEnd::Release => {
                    belief(journal, config, lock, token, Phase::End, Some("unlocked".into()));
                    backend.release(&session, journal, &key, token).await;
                }
                HoldEnd::Rejected => {
                    belief(
                        journal,
                        config,
                        lock,
                        token,
                        Phase::End,
                        Some("write rejected: a newer holder exists".into()),
                    );
                    backend.release(&session, journal, &key, token).await;
                }
                HoldEnd::SessionEnded => belief(journal, config, lock, token, Phase::End, session.ended()),
            }
            tokio::time::sleep(Duration::from_millis(lock.think_ms)).await;
        }
        backend.drop_session();
        tokio::time::sleep(SESSION_RETRY).await;
    }
}

async fn hold(
    config: &ClientConfig,
    lock: &LockConfig,
    session: &SessionWatch,
    journal: &Journal,
    resource: &mut ResourceClient,
    token: i64,
    written: &mut u64,
) -> HoldEnd {
    let gap = Duration::from_millis(lock.hold_ms) / lock.writes_per_hold.max(1);
    for i in 0..lock.writes_per_hold {
        if i > 0 && !work_or_session_end(session, gap).await {
            return HoldEnd::SessionEnded;
        }
        // The client acts on its belief: it checks its session, as an application would, but
        // cannot know of an expiry its session has not yet learned from a server.
        if session.ended().is_some() {
            return HoldEnd::SessionEnded;
        }
        *written += 1;
        let value = format!("{}-{}", config.name, written);
        if resource.write(journal, &config.name, token, value).await == Some(false) {
            return HoldEnd::Rejected;
        }
    }
    if work_or_session_end(session, gap).await { HoldEnd::Release } else { HoldEnd::SessionEnded }
}

/// Works (sleeps) for `duration` unless the session ends first; false if it ended.
async fn work_or_session_end(session: &SessionWatch, duration: Duration) -> bool {
    tokio::select! {
        biased;
        () = tokio::time::sleep(duration) => session.ended().is_none(),
        () = session.wait_end() => false,
    }
}

fn belief(
    journal: &Journal,
    config: &ClientConfig,
    lock: &LockConfig,
    token: i64,
    phase: Phase,
    reason: Option<String>,
) {
    journal.record(&config.name, Event::Belief { lock: lock.lock_name.clone(), token, phase, reason });
}

/// Sleeps until `at_ns` of true time since the epoch. The process's timers may run at a skewed
/// rate (libfaketime), so it sleeps in short steps and looks at true time after each.
pub async fn sleep_until(journal: &Journal, at_ns: u64) {
    loop {
        let now = journal.now_ns();
        if now >= at_ns {
            return;
        }
        tokio::time::sleep(Duration::from_nanos(at_ns - now).min(Duration::from_millis(20))).await;
    }
}

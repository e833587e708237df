//! The client process's workload: the simulator's lock loop (`coordsim_sim::lock_loop`, one
//! loop for both worlds) on a real system: open a session, acquire, write to the resource with
//! the fencing token, release, think; a new session when the last one ended. It records beliefs
//! as well as calls.

use std::time::Duration;

use coordsim_checker::history::{Event, Phase};
use coordsim_sim::lock_loop::{self, LockLoop, LockWorld};

use crate::config::{ClientConfig, LockConfig};
use crate::journal::Journal;
use crate::resource::ResourceClient;
use crate::session::SessionWatch;

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

/// Runs the workload until the task is dropped (the process exits at `stop_ns`): the
/// simulator's lock loop (`coordsim_sim::lock_loop`), driven through the real recipe.
pub async fn run(config: &ClientConfig, lock: &LockConfig, backend: &mut impl LockBackend, journal: &Journal) {
    sleep_until(journal, config.start_ns).await;
    let workload = LockLoop {
        name: config.name.clone(),
        hold: Duration::from_millis(lock.hold_ms),
        writes_per_hold: lock.writes_per_hold,
        think: Duration::from_millis(lock.think_ms),
        nested: lock.nested,
        reentrant: lock.reentrant,
    };
    let resource = ResourceClient::new(&lock.resource_name, &lock.resource_addr);
    let mut world = RealLockClient { config, lock, backend, journal, resource };
    lock_loop::run(&mut world, &workload).await
}

/// A real client process's lock workload: its session and recipe on the real cluster, and the
/// resource over TCP.
struct RealLockClient<'a, B> {
    config: &'a ClientConfig,
    lock: &'a LockConfig,
    backend: &'a mut B,
    journal: &'a Journal,
    resource: ResourceClient,
}

impl<B: LockBackend> LockWorld for RealLockClient<'_, B> {
    type Session = SessionWatch;

    async fn open_session(&mut self) -> Option<SessionWatch> {
        self.backend.open_session(self.journal).await.ok()
    }

    fn session_ended(&self, session: &SessionWatch) -> bool {
        session.ended().is_some()
    }

    async fn acquire(&mut self, session: &SessionWatch) -> Option<(String, i64)> {
        self.backend.acquire(session, self.journal).await.ok()
    }

    async fn release(&mut self, session: &SessionWatch, key: &str, token: i64) {
        self.backend.release(session, self.journal, key, token).await
    }

    /// A real client loses a hold only with its session.
    fn hold_lost(&self, session: &SessionWatch) -> Option<String> {
        session.ended()
    }

    async fn work(&mut self, session: &SessionWatch, duration: Duration) -> bool {
        tokio::select! {
            biased;
            () = tokio::time::sleep(duration) => session.ended().is_none(),
            () = session.wait_end() => false,
        }
    }

    async fn write(&mut self, token: i64, value: String) -> Option<bool> {
        self.resource.write(self.journal, &self.config.name, token, value).await
    }

    fn belief(&mut self, token: i64, phase: Phase, reason: Option<String>) {
        let event = Event::Belief { lock: self.lock.lock_name.clone(), token, phase, reason };
        self.journal.record(&self.config.name, event);
    }

    async fn sleep(&mut self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    fn drop_session(&mut self, session: SessionWatch) {
        drop(session);
        self.backend.drop_session();
    }
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

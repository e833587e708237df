//! The lock workload's loop, once for both worlds: open a session; acquire; record the belief;
//! write to the resource with the fencing token while holding; release; think; a new session
//! when the last one ended. The simulator (`crate::workload`) and the real runner
//! (`coordsim_real::workload`) implement [`LockWorld`] for their clients, so what a hold means,
//! when a client gives up on it and what it records cannot drift apart between the two.
//!
//! Generic over the world and free of madsim and tokio: only the world sleeps, calls and records.

use std::time::Duration;

use coordsim_checker::history::Phase;

/// Pause before opening a new session after the last one could not be opened or ended.
pub const SESSION_RETRY: Duration = Duration::from_millis(200);

/// One client's lock workload, as the scenario gives it.
#[derive(Clone, Debug)]
pub struct LockLoop {
    /// The client's name: its resource writes carry `{name}-{n}`.
    pub name: String,
    /// How long a hold lasts, its writes spread evenly over it.
    pub hold: Duration,
    pub writes_per_hold: u32,
    /// The pause after a release before asking again.
    pub think: Duration,
    /// Nested acquisitions per hold, and whether the recipe counts them (reentrant).
    pub nested: u32,
    pub reentrant: bool,
}

/// A client's session, recipe and resource in one world (simulated or real).
// Only our own drivers implement and call it, each on one thread: no `Send` bounds needed.
#[allow(async_fn_in_trait)]
pub trait LockWorld {
    type Session;

    /// Opens a session (etcd: a lease and its keepalives; ZooKeeper: a connection), recording it;
    /// `None` if it could not be opened.
    async fn open_session(&mut self) -> Option<Self::Session>;
    /// Whether the session has ended (the client knows its lease or session is gone).
    fn session_ended(&self, session: &Self::Session) -> bool;
    /// Acquires the lock: the holder key and the fencing token, or `None` (the session is lost).
    async fn acquire(&mut self, session: &Self::Session) -> Option<(String, i64)>;
    /// Releases the lock held under `key` with `token`.
    async fn release(&mut self, session: &Self::Session, key: &str, token: i64);
    /// Why the client no longer holds what it was granted, if it knows (its session ended, or
    /// its connection was suspended under Curator's standard policy).
    fn hold_lost(&self, session: &Self::Session) -> Option<String>;
    /// Works (sleeps) for `duration` unless the hold is lost first; false if it was.
    async fn work(&mut self, session: &Self::Session, duration: Duration) -> bool;
    /// One recorded write to the resource: `Some(accepted)`, or `None` if the reply was lost.
    async fn write(&mut self, token: i64, value: String) -> Option<bool>;
    /// Records what the client believes of `token`: it holds it from `Start`, not after `End`.
    fn belief(&mut self, token: i64, phase: Phase, reason: Option<String>);
    /// Sleeps `duration` of the client's own time.
    async fn sleep(&mut self, duration: Duration);
    /// A hold begins and ends (the session's keepalives may depend on it).
    fn hold_started(&mut self, _session: &Self::Session) {}
    fn hold_ended(&mut self, _session: &Self::Session) {}
    /// The session is left behind: its keepalives stop and it expires on the server.
    fn drop_session(&mut self, session: Self::Session) {
        drop(session);
    }
}

/// How a hold ended.
enum HoldEnd {
    /// Done writing: release the lock.
    Release,
    /// The hold was lost while holding (the session ended or was suspended).
    Lost,
    /// The resource refused our token: someone newer holds the lock.
    Rejected,
}

/// Runs the workload until its task is dropped (the run ends).
pub async fn run<W: LockWorld>(world: &mut W, plan: &LockLoop) {
    let mut written = 0u64;
    loop {
        let Some(session) = world.open_session().await else {
            world.sleep(SESSION_RETRY).await;
            continue;
        };
        while !world.session_ended(&session) {
            let Some((key, token)) = world.acquire(&session).await else { break };
            world.belief(token, Phase::Start, None);
            world.hold_started(&session);
            // Nested acquisitions (a recursive caller): free with a reentrant lock; otherwise the
            // recipe is asked again, and its release is a real release.
            if !plan.reentrant {
                for _ in 0..plan.nested {
                    if let Some((inner, inner_token)) = world.acquire(&session).await {
                        world.release(&session, &inner, inner_token).await;
                    }
                }
            }
            match hold(world, plan, &session, token, &mut written).await {
                HoldEnd::Release => {
                    world.belief(token, Phase::End, Some("unlocked".into()));
                    world.release(&session, &key, token).await;
                }
                HoldEnd::Rejected => {
                    world.belief(token, Phase::End, Some("write rejected: a newer holder exists".into()));
                    world.release(&session, &key, token).await;
                }
                HoldEnd::Lost => {
                    let reason = world.hold_lost(&session);
                    world.belief(token, Phase::End, reason);
                    // Curator's standard policy at SUSPENDED: the session lives on, so the
                    // client deletes its node (once reconnected) before it queues again.
                    if !world.session_ended(&session) {
                        world.release(&session, &key, token).await;
                    }
                }
            }
            world.hold_ended(&session);
            world.sleep(plan.think).await;
        }
        world.drop_session(session);
        world.sleep(SESSION_RETRY).await;
    }
}

/// Writes to the resource `writes_per_hold` times, spread evenly over `hold`.
async fn hold<W: LockWorld>(
    world: &mut W,
    plan: &LockLoop,
    session: &W::Session,
    token: i64,
    written: &mut u64,
) -> HoldEnd {
    let gap = plan.hold / plan.writes_per_hold.max(1);
    for i in 0..plan.writes_per_hold {
        if i > 0 && !world.work(session, gap).await {
            return HoldEnd::Lost;
        }
        // The client acts on its belief: it checks its session, as an application would, but
        // cannot know of an expiry its session has not yet learned from a server.
        if world.hold_lost(session).is_some() {
            return HoldEnd::Lost;
        }
        *written += 1;
        let value = format!("{}-{}", plan.name, written);
        if world.write(token, value).await == Some(false) {
            return HoldEnd::Rejected;
        }
    }
    if world.work(session, gap).await { HoldEnd::Release } else { HoldEnd::Lost }
}

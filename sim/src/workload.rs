//! The client workload on the simulator: the lock loop (`crate::lock_loop`, shared with the real
//! runner) driven through the simulated client's recipes, and Redlock's own loop. It records
//! what the client *believes* (that it holds the lock) as well as what it does, because the gap
//! between the two is what the checkers judge.

use std::net::SocketAddr;
use std::time::Duration;

use crate::net::Endpoint;
use coordsim_checker::history::{Call, Event, Phase, Return};

use crate::client::election::{campaign, resign};
use crate::client::redlock::Redlock;
use crate::client::zk::ZkClient;
use crate::client::{
    Client, ClientDeadline, EtcdLockConfig, LockError, Session, lock, lock_api, lock_zk, unlock, unlock_api, unlock_zk,
};
use crate::clock::{Clock, ClockKind};
use crate::lock_loop::{self, LockLoop, LockWorld};
use crate::recipe::zk_lock::ZkLockConfig;
use crate::recorder::Recorder;
use crate::rpc::{LeaderKey, ResourceReply, ResourceWrite};
use crate::scenario::{Bugs, EntryLifetime, KeepAliveMode, Recipe};

/// How long a write to the resource may take before its outcome counts as unknown.
const RESOURCE_TIMEOUT: Duration = Duration::from_millis(500);

/// One client's part of the scenario.
#[derive(Clone, Debug)]
pub struct ClientPlan {
    pub name: String,
    pub addr: SocketAddr,
    pub servers: Vec<(u64, SocketAddr)>,
    pub recipe: Recipe,
    /// etcd-cas: random backoff before retrying after a wakeup.
    pub backoff: Option<Duration>,
    pub lock_name: String,
    pub ttl_ms: u64,
    /// How long the client keeps acting after its last acknowledged keepalive, and by which of
    /// its clocks (`None`: until its session learns that the lease is gone, as etcd clientv3 does).
    pub deadline: Option<ClientDeadline>,
    /// True instant at which the client starts (after a crash it restarts at once).
    pub start: std::time::Instant,
    pub hold: Duration,
    pub writes_per_hold: u32,
    pub think: Duration,
    pub resource: (String, SocketAddr),
    pub bugs: crate::scenario::Bugs,
    /// etcd-semaphore: holders at once.
    pub permits: u32,
    /// Nested acquisitions per hold, and whether the client counts them (reentrant).
    pub nested: u32,
    pub reentrant: bool,
    /// Whether the recipe's key or znode lives with the session or until deleted.
    pub lifetime: EntryLifetime,
    /// Who renews the session's lease: a background task, or the loop between holds.
    pub keepalive: KeepAliveMode,
    /// Redlock: which of the client's clocks times the validity time.
    pub validity_clock: ClockKind,
    /// ZooKeeper recipes: Curator's connection-state error policy (`None`: a plain client).
    pub connection_policy: Option<crate::scenario::ConnectionStateErrorPolicy>,
}

pub async fn run_client(plan: ClientPlan, clock: Clock, recorder: Recorder) {
    madsim::time::sleep_until(plan.start).await;
    if plan.recipe == Recipe::Redlock {
        return run_redlock_client(plan, clock, recorder).await;
    }
    let client =
        Client::connect(plan.addr, plan.servers.clone(), clock.clone()).await.expect("a client binds its own address");
    let workload = LockLoop {
        name: plan.name.clone(),
        hold: plan.hold,
        writes_per_hold: plan.writes_per_hold,
        think: plan.think,
        nested: plan.nested,
        reentrant: plan.reentrant,
    };
    let mut world = SimLockClient { plan: &plan, client, recorder: &recorder, clock };
    lock_loop::run(&mut world, &workload).await
}

/// A simulated client's lock workload: its session, recipe and resource on the simulator.
struct SimLockClient<'a> {
    plan: &'a ClientPlan,
    client: Client,
    recorder: &'a Recorder,
    clock: Clock,
}

impl LockWorld for SimLockClient<'_> {
    /// The session, and for the ZooKeeper recipes the ZooKeeper client it lives on.
    type Session = (Session, Option<ZkClient>);

    async fn open_session(&mut self) -> Option<Self::Session> {
        open_session(self.plan, &self.client, self.recorder).await
    }

    fn session_ended(&self, (session, _): &Self::Session) -> bool {
        session.ended().is_some()
    }

    async fn acquire(&mut self, (session, zk): &Self::Session) -> Option<(String, i64)> {
        acquire(self.plan, &self.client, zk.as_ref(), session, self.recorder).await.ok()
    }

    async fn release(&mut self, (session, zk): &Self::Session, key: &str, token: i64) {
        release(self.plan, &self.client, zk.as_ref(), self.recorder, session, (key, token)).await
    }

    fn hold_lost(&self, (session, _): &Self::Session) -> Option<String> {
        session.hold_lost()
    }

    async fn work(&mut self, (session, _): &Self::Session, duration: Duration) -> bool {
        work_or_session_end(&self.client, session, duration).await
    }

    async fn write(&mut self, token: i64, value: String) -> Option<bool> {
        write(self.plan, self.client.endpoint(), self.recorder, token, value).await
    }

    fn belief(&mut self, token: i64, phase: Phase, reason: Option<String>) {
        belief(self.recorder, self.plan, token, phase, reason.as_deref());
    }

    async fn sleep(&mut self, duration: Duration) {
        self.clock.sleep(duration).await;
    }

    fn hold_started(&mut self, (session, _): &Self::Session) {
        session.hold_started();
    }

    fn hold_ended(&mut self, (session, _): &Self::Session) {
        session.hold_ended();
    }
}

/// Opens the client's session: for the ZooKeeper recipes a ZooKeeper session, with the client
/// connected to one server (drawn from the run's RNG) that the recipe's requests use too.
async fn open_session(plan: &ClientPlan, client: &Client, recorder: &Recorder) -> Option<(Session, Option<ZkClient>)> {
    if plan.recipe.is_zookeeper() {
        let opened = Session::open_zookeeper(client, recorder, &plan.name, plan.ttl_ms, plan.connection_policy).await;
        return opened.map(|(session, zk)| (session, Some(zk)));
    }
    let session = Session::open(
        client,
        recorder,
        &plan.name,
        plan.ttl_ms,
        plan.deadline,
        plan.bugs.ignore_keepalive_failure,
        plan.keepalive,
    )
    .await?;
    Some((session, None))
}

/// The lock workload with Redlock: no session; a holder acts while its validity time runs.
/// Before each piece of work the client checks that it still holds the lock (by its validity
/// time) and after the work it writes the work's result: a pause during the work (a GC pause)
/// makes the write late, the window Kleppmann's example is about.
async fn run_redlock_client(plan: ClientPlan, clock: Clock, recorder: Recorder) {
    let endpoint = Endpoint::bind(plan.addr).await.expect("a client binds its own address");
    let redlock = Redlock {
        endpoint: &endpoint,
        servers: plan.servers.iter().map(|(id, addr)| (format!("s{id}"), *addr)).collect(),
        clock: &clock,
        validity_clock: plan.validity_clock,
        recorder: &recorder,
        node: &plan.name,
    };
    let mut written = 0u64;
    loop {
        let held = redlock.lock(&plan.lock_name, plan.ttl_ms).await;
        belief(&recorder, &plan, held.token, Phase::Start, None);
        let gap = plan.hold / plan.writes_per_hold;
        let mut valid = true;
        for i in 0..plan.writes_per_hold {
            if i > 0 {
                if !redlock.valid(&held) {
                    valid = false;
                    break;
                }
                clock.sleep(gap).await;
            }
            written += 1;
            let value = format!("{}-{}", plan.name, written);
            write(&plan, &endpoint, &recorder, held.token, value).await;
        }
        if valid {
            clock.sleep(gap).await;
            valid = redlock.valid(&held);
        }
        let reason = if valid { "unlocked" } else { "validity time over" };
        belief(&recorder, &plan, held.token, Phase::End, Some(reason));
        redlock.unlock(&plan.lock_name, &held).await;
        clock.sleep(plan.think).await;
    }
}

/// One acquisition with the scenario's recipe: the holder key and the token.
async fn acquire(
    plan: &ClientPlan,
    client: &Client,
    zk: Option<&ZkClient>,
    session: &Session,
    recorder: &Recorder,
) -> Result<(String, i64), LockError> {
    let (node, name) = (plan.name.as_str(), plan.lock_name.as_str());
    match plan.recipe {
        recipe @ (Recipe::EtcdMutex | Recipe::EtcdCas | Recipe::EtcdSemaphore) => {
            let config =
                EtcdLockConfig { recipe, permits: plan.permits, lifetime: plan.lifetime, backoff: plan.backoff };
            lock(client, session, recorder, node, name, config).await
        }
        Recipe::EtcdLockApi => lock_api(client, session, recorder, node, name).await,
        Recipe::EtcdElection => {
            let elected = campaign(client, session, recorder, node, name, node).await;
            elected.map(|leader| (leader.key, leader.rev))
        }
        Recipe::Redlock => unreachable!("a Redlock client runs run_redlock_client"),
        Recipe::ZkQueueLock | Recipe::ZkHerdLock | Recipe::ZkElection => {
            let config = zk_config(plan.recipe, plan.bugs, plan.lifetime);
            let zk = zk.expect("a ZooKeeper recipe has a ZooKeeper client");
            lock_zk(zk, session, recorder, node, name, config).await
        }
    }
}

/// The recipe's variant under the scenario's bug switches.
fn zk_config(recipe: Recipe, bugs: Bugs, lifetime: EntryLifetime) -> ZkLockConfig {
    let base = match recipe {
        Recipe::ZkHerdLock => ZkLockConfig::HERD,
        Recipe::ZkElection => ZkLockConfig::ELECTION,
        _ => ZkLockConfig::QUEUE,
    };
    ZkLockConfig {
        unique_tag: !bugs.no_unique_tag_in_sequential_create,
        recheck_vanished: !bugs.lost_wakeup_on_vanished_predecessor,
        lifetime,
        ..base
    }
}

async fn release(
    plan: &ClientPlan,
    client: &Client,
    zk: Option<&ZkClient>,
    recorder: &Recorder,
    session: &Session,
    (key, token): (&str, i64),
) {
    let lease = session.lease;
    let budget = Duration::from_millis(plan.ttl_ms);
    match plan.recipe {
        recipe @ (Recipe::EtcdMutex | Recipe::EtcdCas | Recipe::EtcdSemaphore) => {
            unlock(client, recorder, &plan.name, &plan.lock_name, recipe, (key, token), budget).await
        }
        Recipe::EtcdLockApi => unlock_api(client, recorder, &plan.name, &plan.lock_name, key, budget).await,
        Recipe::EtcdElection => {
            let leader = LeaderKey { name: plan.lock_name.clone(), key: key.to_string(), rev: token, lease };
            resign(client, recorder, &plan.name, &leader, budget).await
        }
        Recipe::Redlock => unreachable!("a Redlock client runs run_redlock_client"),
        Recipe::ZkQueueLock | Recipe::ZkHerdLock | Recipe::ZkElection => {
            let zk = zk.expect("a ZooKeeper recipe has a ZooKeeper client");
            unlock_zk(zk, session, recorder, &plan.name, &plan.lock_name, key).await
        }
    }
}

/// Works (sleeps) for `duration` while watching the session, as an application that selects on
/// its session's end would. False if the session ended first.
async fn work_or_session_end(client: &Client, session: &Session, duration: Duration) -> bool {
    let work = std::pin::pin!(client.clock().sleep(duration));
    let end = std::pin::pin!(session.wait_hold_lost());
    match futures::future::select(work, end).await {
        futures::future::Either::Left(((), _)) => session.hold_lost().is_none(),
        futures::future::Either::Right(_) => false,
    }
}

/// One recorded write to the resource: `Some(accepted)`, or `None` when the reply was lost.
async fn write(plan: &ClientPlan, endpoint: &Endpoint, recorder: &Recorder, token: i64, value: String) -> Option<bool> {
    let (resource, addr) = &plan.resource;
    let call = Call::Write { resource: resource.clone(), token, value: value.clone() };
    let op = recorder.invoke(&plan.name, call);
    let request = ResourceWrite { client: plan.name.clone(), token, value };
    match endpoint.call(*addr, request, RESOURCE_TIMEOUT).await {
        Ok(ResourceReply::Accepted) => {
            recorder.ok(&plan.name, op, Return::Written);
            Some(true)
        }
        Ok(ResourceReply::Rejected { highest }) => {
            recorder.fail(&plan.name, op, format!("rejected: token {token} is below {highest}"));
            Some(false)
        }
        Err(error) => {
            recorder.info(&plan.name, op, error.to_string());
            None
        }
    }
}

fn belief(recorder: &Recorder, plan: &ClientPlan, token: i64, phase: Phase, reason: Option<&str>) {
    let event = Event::Belief { lock: plan.lock_name.clone(), token, phase, reason: reason.map(str::to_string) };
    recorder.record(&plan.name, event);
}

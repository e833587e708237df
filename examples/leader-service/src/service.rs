//! The leader service itself: one source for both worlds. It names `etcd_client` through its
//! parent module, which is coordsim's API under the simulator and the real etcd-client crate
//! elsewhere (see `lib.rs`, and `real/tests/leader_service_on_real_etcd.rs`, which compiles this
//! very file against the real crate and runs it on a real cluster).

use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

use super::etcd_client::{self, Client, LeaderKey, ResignOptions};

/// The election every replica campaigns in.
pub const ELECTION: &str = "/service/leader";
/// The lease's time to live, in seconds.
pub const TTL_S: i64 = 5;
/// How often the leader renews its lease.
pub const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);
/// What the leader keeps back from its TTL for clock drift and the keepalive's flight.
pub const SAFETY_MARGIN: Duration = Duration::from_secs(1);
/// Time between the leader's writes.
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// Which leader loop the service runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The bug: keeps leading after its lease is gone, until the store refuses a write.
    IgnoresLeaseLoss,
    /// The fix: steps down when its lease may have expired, by its own clock.
    StepsDownAtDeadline,
}

/// What the service does outside etcd.
pub trait Effects {
    /// Writes `value` to the store with fencing token `token`; false if the store refused it
    /// (a newer leader wrote) or the write's outcome is unknown.
    fn write(&self, token: i64, value: String) -> impl Future<Output = bool>;
    /// The service now believes it leads with `term`.
    fn leading(&self, term: i64);
    /// The service stopped believing it leads with `term`.
    fn stepped_down(&self, term: i64, reason: &str);
    /// Sleeps on the local clock.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
    /// Local monotonic time.
    fn now(&self) -> Duration;
}

/// Runs one replica for ever: campaign, lead, step down, campaign again.
pub async fn run_replica(endpoints: Vec<String>, name: String, variant: Variant, effects: impl Effects) {
    loop {
        let Ok(client) = Client::connect(&endpoints, None).await else {
            effects.sleep(Duration::from_secs(1)).await;
            continue;
        };
        let _ = serve_one_term(client, &name, variant, &effects).await;
        effects.sleep(Duration::from_millis(500)).await;
    }
}

/// One lease: campaign under it, lead while it lasts, give it up.
async fn serve_one_term(
    mut client: Client,
    name: &str,
    variant: Variant,
    effects: &impl Effects,
) -> Result<(), etcd_client::Error> {
    let lease = client.lease_grant(TTL_S, None).await?.id();
    let (mut keeper, mut answers) = client.lease_keep_alive(lease).await?;
    // Keepalives while campaigning, too: a candidate whose lease lapses loses its place.
    let mut renewals = Renewals::new(effects.now());
    let mut candidate = client.clone();
    let leader: LeaderKey = {
        let mut campaign = std::pin::pin!(candidate.campaign(ELECTION, name, lease));
        loop {
            let tick = effects.sleep(KEEPALIVE_EVERY);
            match select(&mut campaign, tick).await {
                Some(result) => break result?.take_leader().expect("a campaign answers with its leader key"),
                None => renewals.renew(&mut keeper, &mut answers, effects).await?,
            }
        }
    };
    let term = leader.rev();
    effects.leading(term);
    let mut writes = 0u64;
    let reason = loop {
        if variant == Variant::StepsDownAtDeadline && effects.now() >= renewals.deadline() {
            break "lease may have expired";
        }
        if renewals.lost {
            break "lease not found";
        }
        writes += 1;
        if !effects.write(term, format!("{name}-{term}-{writes}")).await && variant == Variant::IgnoresLeaseLoss {
            break "write refused";
        }
        if renewals.due(effects.now()) {
            renewals.renew(&mut keeper, &mut answers, effects).await?;
        } else {
            effects.sleep(WORK_EVERY).await;
        }
    };
    effects.stepped_down(term, reason);
    let _ = client.resign(Some(ResignOptions::new().with_leader(leader))).await;
    let _ = client.lease_revoke(lease).await;
    Ok(())
}

/// The lease's renewals as the replica knows them.
struct Renewals {
    /// Send times of keepalives not answered yet, oldest first. An answer is credited to the
    /// oldest: if answers come late, that only moves the deadline earlier.
    pending: VecDeque<Duration>,
    /// Send time of the newest keepalive known to have been answered.
    acknowledged: Duration,
    last_sent: Duration,
    lost: bool,
}

impl Renewals {
    fn new(now: Duration) -> Renewals {
        Renewals { pending: VecDeque::new(), acknowledged: now, last_sent: now, lost: false }
    }

    /// When the lease may have expired on the servers, by this replica's clock.
    fn deadline(&self) -> Duration {
        self.acknowledged + Duration::from_secs(TTL_S as u64) - SAFETY_MARGIN
    }

    fn due(&self, now: Duration) -> bool {
        now >= self.last_sent + KEEPALIVE_EVERY
    }

    /// Sends one keepalive and waits up to a tenth of a TTL for answers.
    async fn renew(
        &mut self,
        keeper: &mut etcd_client::LeaseKeeper,
        answers: &mut etcd_client::LeaseKeepAliveStream,
        effects: &impl Effects,
    ) -> Result<(), etcd_client::Error> {
        self.last_sent = effects.now();
        self.pending.push_back(self.last_sent);
        keeper.keep_alive().await?;
        let wait = effects.sleep(Duration::from_millis(500));
        if let Some(Ok(Some(answer))) = select(answers.message(), wait).await {
            let sent = self.pending.pop_front().unwrap_or(self.acknowledged);
            if answer.ttl() > 0 {
                self.acknowledged = self.acknowledged.max(sent);
            } else {
                self.lost = true;
            }
        }
        Ok(())
    }
}

/// `Some(output)` if `future` finishes before `timer`, else `None`.
async fn select<F: Future, T: Future<Output = ()>>(future: F, timer: T) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut timer = std::pin::pin!(timer);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

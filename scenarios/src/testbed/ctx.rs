//! What a Testbed client's code is handed: its name, the cluster's endpoints, an etcd client,
//! the protected resource, its local clock, and calls that record what the code believes.

use std::time::Duration;

use coordsim_checker::history::{Call, Event, Phase, Return};
use coordsim_sim::harness::ClientEnv;
use coordsim_sim::net::Endpoint;
use coordsim_sim::rpc::{ResourceReply, ResourceWrite};

use crate::etcd;

/// How long a write to the resource may take before its outcome is unknown (as the built-in
/// workload's).
const RESOURCE_TIMEOUT: Duration = Duration::from_millis(500);

/// One client node's handle on the run. Cheap to clone; valid only inside its node.
#[derive(Clone)]
pub struct Ctx {
    env: ClientEnv,
}

/// How a write to the protected resource ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The resource took the write.
    Accepted,
    /// A fenced resource refused it: `highest`, a higher token, was accepted before.
    Rejected { highest: i64 },
    /// No answer in time: the write may or may not have landed.
    Unknown,
}

impl Ctx {
    pub(crate) fn new(env: ClientEnv) -> Ctx {
        etcd::register_node(&env);
        Ctx { env }
    }

    /// This client's node name: `c1`, `c2`, ...
    pub fn name(&self) -> &str {
        &self.env.name
    }

    /// The client's index, 0 for c1.
    pub fn index(&self) -> usize {
        self.env.name.trim_start_matches('c').parse::<usize>().map_or(0, |n| n.saturating_sub(1))
    }

    /// The servers as etcd endpoints (`10.0.0.1:2379`, ...), for `etcd::Client::connect`.
    pub fn endpoints(&self) -> Vec<String> {
        self.env.servers.iter().map(|(_, addr)| format!("{}:2379", addr.ip())).collect()
    }

    /// The servers as a ZooKeeper connect string (`10.0.0.1:2181,10.0.0.2:2181,...`).
    pub fn zookeeper_cluster(&self) -> String {
        let hosts: Vec<String> = self.env.servers.iter().map(|(_, addr)| format!("{}:2181", addr.ip())).collect();
        hosts.join(",")
    }

    /// A ZooKeeper session from this node with `session_timeout`.
    pub async fn zookeeper(&self, session_timeout: Duration) -> crate::zookeeper::Result<crate::zookeeper::Client> {
        let cluster = self.zookeeper_cluster();
        crate::zookeeper::Client::connector().with_session_timeout(session_timeout).connect(&cluster).await
    }

    /// An etcd client connected from this node, with etcd-client's default options.
    pub async fn etcd(&self) -> etcd::Result<etcd::Client> {
        etcd::Client::connect(self.endpoints(), None).await
    }

    /// Writes `value` to the protected resource with fencing token `token` (recorded as a `write`
    /// operation and judged by `mutual_exclusion` and `fencing`). Use the token the service gave:
    /// the lock key's or leader key's create revision.
    pub async fn write_resource(&self, token: i64, value: impl Into<String>) -> WriteOutcome {
        let value = value.into();
        let (resource, addr) = &self.env.resource;
        let recorder = &self.env.recorder;
        let op =
            recorder.invoke(&self.env.name, Call::Write { resource: resource.clone(), token, value: value.clone() });
        let local = std::net::SocketAddr::new(self.env.addr.ip(), 0);
        let endpoint = match Endpoint::bind(local).await {
            Ok(endpoint) => endpoint,
            Err(error) => {
                recorder.info(&self.env.name, op, error.to_string());
                return WriteOutcome::Unknown;
            }
        };
        let request = ResourceWrite { client: self.env.name.clone(), token, value };
        match endpoint.call(*addr, request, RESOURCE_TIMEOUT).await {
            Ok(ResourceReply::Accepted) => {
                recorder.ok(&self.env.name, op, Return::Written);
                WriteOutcome::Accepted
            }
            Ok(ResourceReply::Rejected { highest }) => {
                recorder.fail(&self.env.name, op, format!("rejected: token {token} is below {highest}"));
                WriteOutcome::Rejected { highest }
            }
            Err(error) => {
                recorder.info(&self.env.name, op, error.to_string());
                WriteOutcome::Unknown
            }
        }
    }

    /// Records that this client now believes it holds `lock` (or leads the election `lock`) with
    /// fencing token `token`: `single_holder` judges these beliefs in true time.
    pub fn believe_held(&self, lock: &str, token: i64) {
        self.record_belief(lock, token, Phase::Start, None);
    }

    /// Records that the belief in `lock` with `token` ended, and why ("resigned", "lease lost").
    pub fn believe_released(&self, lock: &str, token: i64, reason: &str) {
        self.record_belief(lock, token, Phase::End, Some(reason.to_string()));
    }

    fn record_belief(&self, lock: &str, token: i64, phase: Phase, reason: Option<String>) {
        let event = Event::Belief { lock: lock.to_string(), token, phase, reason };
        self.env.recorder.record(&self.env.name, event);
    }

    /// Records an event of your code (`name`, with `attrs`) in the history, in true time, for
    /// your own [`super::Checker`]s: `ctx.record("own", &[("partition", "3")])`.
    pub fn record(&self, name: &str, attrs: &[(&str, &str)]) {
        let attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.env.recorder.record(&self.env.name, Event::User { name: name.to_string(), attrs });
    }

    /// Sleeps `duration` of this node's monotonic clock, as `tokio::time::sleep` does (its rate
    /// applies; a jump of the wall clock does not).
    pub async fn sleep(&self, duration: Duration) {
        self.env.clock.sleep(duration).await;
    }

    /// This node's wall clock (`SystemTime::now`): ns since the run began by that clock, signed
    /// (an offset clock may read before 0). `clock-jump` and `clock-strobe` faults step it, and
    /// `[[clock]]` offsets and `clock-rate` faults move it. Code that computes a deadline from
    /// wall timestamps (a lock value holding an expiry time, say) reads this.
    pub fn wall_now_ns(&self) -> i64 {
        self.env.clock.wall_now().0
    }

    /// This node's monotonic clock (`Instant::now`): ns, signed, with the `[[clock]]` offset as
    /// its arbitrary origin; it follows the clock's rate and never jumps.
    pub fn monotonic_now_ns(&self) -> i64 {
        self.env.clock.now().0
    }
}

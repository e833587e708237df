//! Real clusters on 127.0.0.1: a 3-member etcd cluster or a ZooKeeper ensemble from Debian's
//! packages, each server a process of ours with its data directory under the run's folder.

pub mod etcd;
pub mod zookeeper;

use std::time::Duration;

/// How long a cluster may take to serve after its start (measured here: etcd about 1 s,
/// a ZooKeeper ensemble about 2 s).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running cluster of either kind, as the nemesis and the clients need it.
// Only our own code implements and calls it, on one thread: no `Send` bounds needed.
#[allow(async_fn_in_trait)]
pub trait Cluster {
    /// Server names (`s1`, `s2`, ...), in order.
    fn servers(&self) -> Vec<String>;
    /// What clients connect to.
    fn client_endpoints(&self) -> Vec<String>;
    /// Which server leads now, if the cluster says.
    async fn leader(&self) -> Option<String>;
    /// The leases (etcd) or sessions (ZooKeeper) the cluster holds now; `None` when it could not
    /// say (no leader, a server paused).
    async fn sessions(&self) -> Option<std::collections::BTreeSet<i64>>;
    /// How many answers in a row must leave a lease out before it is taken for gone: 1 where
    /// the listing is read under the lessor's lock (etcd's LeaseLeases), more where a live
    /// session can be missed by one listing (ZooKeeper's `dump`).
    const ABSENCES_TO_CONFIRM: u32 = 1;
    /// Kills a server (SIGKILL: a crash; what it did not fsync is lost, as on power loss).
    fn crash(&mut self, server: &str);
    /// Starts a crashed server again on its data directory.
    fn restart(&mut self, server: &str) -> Result<(), String>;
    /// Each live server's own performance counters, as text (etcd: its `/metrics` lines on
    /// WAL fsync, backend commit, peer round trips and proposals; ZooKeeper: `mntr`): what the
    /// time model's calibration reads (docs/time.md). A server that does not answer within a
    /// second is left out.
    async fn server_metrics(&self) -> Vec<(String, String)>;
}

/// Where the nodes of a run live: all on 127.0.0.1 with free ports, or (for partitions) each in
/// a network namespace of its own with its own address and the system's usual ports.
#[derive(Clone, Default)]
pub struct Hosts {
    pub net: Option<std::sync::Arc<crate::netns::Network>>,
    /// Environment per node: a skewed clock (libfaketime).
    pub env: std::collections::BTreeMap<String, Vec<(String, String)>>,
}

impl Hosts {
    /// The address `node` listens on.
    pub fn ip(&self, node: &str) -> String {
        self.net.as_ref().map_or_else(|| "127.0.0.1".to_string(), |net| net.ip(node).to_string())
    }

    /// `usual` in a namespace of its own; a free port of 127.0.0.1 otherwise.
    pub fn port(&self, usual: u16) -> Result<u16, String> {
        match self.net {
            Some(_) => Ok(usual),
            None => crate::procs::free_port().map_err(|e| format!("no free port on 127.0.0.1: {e}")),
        }
    }

    /// `command`, to run as `node` (inside its namespace, if it has one).
    pub fn command(&self, node: &str, mut command: std::process::Command) -> std::process::Command {
        for (key, value) in self.env.get(node).into_iter().flatten() {
            command.env(key, value);
        }
        match &self.net {
            Some(net) => net.wrap(node, &command),
            None => command,
        }
    }
}

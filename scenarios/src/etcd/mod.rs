//! etcd's client API with the names and shapes of the etcd-client crate (0.21), on the simulated
//! replicated cluster: code written against etcd-client compiles against this module by switching
//! one `use` (`use coordsim::etcd as etcd_client;` under `cfg(madsim)`), as madsim-etcd-client is
//! used, and runs inside a [`crate::testbed::Testbed`] client.
//!
//! Underneath is coordsim's client library: it finds the leader, follows redirects, retries reads,
//! and sends a write at most once to a server that may apply it (after a lost reply the outcome is
//! unknown, and the call fails with `DeadlineExceeded` as etcd's client would report it). Every
//! call is recorded in the run's history with its invocation and completion in true time, so the
//! checkers judge user code as they judge the built-in recipes.
//!
//! What differs from a real cluster (each is an error, never a silent difference):
//! - keys and values are UTF-8 text (the simulated store keeps strings): other bytes fail with
//!   `Error::InvalidArgs`;
//! - compares over ranges, `with_ignore_value`, min/max mod_revision filters and a Lock without a
//!   lease are not simulated (`InvalidArgs`); auth, maintenance beyond `status` and membership
//!   changes are absent;
//! - a client reaches only the endpoints it names, as etcd-client does (every member serves it:
//!   a follower forwards to the leader), but it stays on the first that answers and moves to the
//!   next when it fails, where etcd-client balances its requests over all of them (tonic's
//!   balanced channel); the response header carries the revision, not the member or term.
//!
//! Time: every deadline here is on the client node's local clock (`[[clock]]` and clock faults
//! move it), as a real client's timers run on its machine's clock.

mod election;
mod error;
mod kv;
mod lease;
mod lock;
mod maintenance;
mod watch;

use std::net::SocketAddr;
use std::time::Duration;

use coordsim_checker::history::{Call, OpId, Return, Touched};
use coordsim_sim::client::{self as sim_client, Unavailable};
use coordsim_sim::harness::ClientEnv;
use coordsim_sim::rpc::{ClientReply, ClientRequest};
use coordsim_sim::store::{Command, CommandResponse, RangeRequest, RangeResponse, StoreError};

pub use election::{
    CampaignResponse, ElectionClient, LeaderKey, LeaderResponse, ObserveStream, ProclaimOptions, ProclaimResponse,
    ResignOptions, ResignResponse,
};
pub use error::{Code, Error, Result, Status};
pub use kv::{
    CompactionOptions, CompactionResponse, Compare, CompareOp, DeleteOptions, DeleteResponse, GetOptions, GetResponse,
    KeyValue, KvClient, PutOptions, PutResponse, ResponseHeader, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
    TxnResponse,
};
pub use lease::{
    LeaseClient, LeaseGrantOptions, LeaseGrantResponse, LeaseKeepAliveResponse, LeaseKeepAliveStream, LeaseKeeper,
    LeaseLeasesResponse, LeaseRevokeResponse, LeaseStatus, LeaseTimeToLiveOptions, LeaseTimeToLiveResponse,
};
pub use lock::{LockClient, LockOptions, LockResponse, UnlockResponse};
pub use maintenance::{ClusterClient, MaintenanceClient, Member, MemberListResponse, StatusResponse};
pub use watch::{Event, EventType, WatchClient, WatchFilterType, WatchOptions, WatchResponse, WatchStream};

/// A call's budget when `ConnectOptions::with_timeout` is not given: etcdctl's default command
/// timeout (5 s). etcd-client itself has none, and a call to a cluster that never answers would
/// wait for ever; a simulated run has an end, so every call here has a budget.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Options of [`Client::connect`], as etcd-client's `ConnectOptions`. Only the request timeout
/// changes anything in the simulator; the others are accepted so the same code compiles.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    timeout: Option<Duration>,
}

impl ConnectOptions {
    /// No options: a 5 s budget per call on the client's local clock.
    pub fn new() -> Self {
        ConnectOptions::default()
    }

    /// The budget of each request, on the client's local clock (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Accepted and ignored: connecting to a simulated member does not fail by itself.
    pub fn with_connect_timeout(self, _timeout: Duration) -> Self {
        self
    }

    /// Accepted and ignored: the simulated transport has no HTTP/2 keepalive.
    pub fn with_keep_alive(self, _interval: Duration, _timeout: Duration) -> Self {
        self
    }

    /// Accepted and ignored: the simulated transport has no HTTP/2 keepalive.
    pub fn with_keep_alive_while_idle(self, _enabled: bool) -> Self {
        self
    }

    /// Accepted and ignored: every simulated call goes to the leader or fails.
    pub fn with_require_leader(self, _require_leader: bool) -> Self {
        self
    }

    /// Accepted and ignored: auth is not simulated.
    pub fn with_user(self, _name: impl Into<String>, _password: impl Into<String>) -> Self {
        self
    }
}

/// Makes `env` the context of the running node (called by the Testbed as the node starts): it
/// lives in the run's node registry, which ends with the run.
pub(crate) fn register_node(env: &ClientEnv) {
    let attached = coordsim_sim::node::attach(env.clone());
    assert!(attached, "a Testbed client node ({}) is registered by the run", env.name);
}

/// The context of the node running the current task.
pub(crate) fn current_node() -> Option<ClientEnv> {
    coordsim_sim::node::attached::<ClientEnv>()
}

/// A client's connection to the cluster, shared by its sub-clients: the simulator's client
/// library, the run's recorder and the node's name.
#[derive(Clone)]
pub(crate) struct Conn {
    client: sim_client::Client,
    env: ClientEnv,
    /// `ConnectOptions::with_timeout`, if given.
    timeout: Option<Duration>,
}

impl Conn {
    /// A request's budget: the connect options' timeout, or [`DEFAULT_TIMEOUT`].
    pub(crate) fn budget(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }

    /// How long a call that blocks on the server (lock, campaign) may wait: the connect options'
    /// timeout, or as long as a run may last (etcd-client waits for ever).
    pub(crate) fn patience(&self) -> Duration {
        self.timeout.unwrap_or(coordsim_sim::scenario::DURATION_MAX)
    }

    pub(crate) fn client(&self) -> &sim_client::Client {
        &self.client
    }

    pub(crate) fn env(&self) -> &ClientEnv {
        &self.env
    }

    pub(crate) fn invoke(&self, call: Call) -> OpId {
        self.env.recorder.invoke(&self.env.name, call)
    }

    pub(crate) fn ok(&self, op: OpId, ret: Return) {
        self.env.recorder.ok(&self.env.name, op, ret);
    }

    pub(crate) fn fail(&self, op: OpId, error: &str) {
        self.env.recorder.fail(&self.env.name, op, error);
    }

    pub(crate) fn info(&self, op: OpId, error: &str) {
        self.env.recorder.info(&self.env.name, op, error);
    }

    pub(crate) fn api_call(&self, method: &str, detail: String, writes: Vec<Touched>) -> Call {
        Call::Api { api: "etcd".into(), method: method.into(), detail, writes, reads: Vec::new() }
    }

    /// A range read no model judges, with the key or prefix it read.
    pub(crate) fn api_read(&self, method: &str, detail: String, reads: Vec<Touched>) -> Call {
        Call::Api { api: "etcd".into(), method: method.into(), detail, writes: Vec::new(), reads }
    }

    pub(crate) fn api_return(detail: &str, revision: i64) -> Return {
        Return::Api { detail: detail.into(), revision, ephemeral_owner: None }
    }

    /// A write, sent at most once to a server that may apply it.
    pub(crate) async fn write(&self, command: Command) -> std::result::Result<CommandResponse, Unavailable> {
        self.client.write_once(command, self.budget()).await
    }

    pub(crate) async fn range(
        &self,
        request: RangeRequest,
        linearizable: bool,
    ) -> std::result::Result<std::result::Result<RangeResponse, StoreError>, Unavailable> {
        if linearizable {
            return self.client.range(request, self.budget()).await;
        }
        match self.client.call(ClientRequest::Range { request, linearizable: false }, self.budget()).await? {
            ClientReply::Range(result) => Ok(result),
            other => Ok(Err(StoreError::InvalidRequest(format!("unexpected reply to a read: {other:?}")))),
        }
    }

    /// Records how a write that did not succeed ended and turns it into etcd's error: a store
    /// rejection certainly did not happen (`fail`); a lost reply may have (`info`).
    pub(crate) fn write_failed(&self, op: OpId, outcome: std::result::Result<CommandResponse, Unavailable>) -> Error {
        match outcome {
            Ok(CommandResponse::Error(error)) => {
                self.fail(op, &error.to_string());
                error::from_store(&error)
            }
            Ok(other) => {
                self.info(op, &format!("unexpected response {other:?}"));
                Error::Internal(format!("unexpected response {other:?}"))
            }
            Err(unavailable) => {
                self.info(op, &unavailable.to_string());
                error::from_unavailable(&unavailable)
            }
        }
    }
}

/// etcd-client's `Client`: the KV, Lease, Watch, Lock and Election services, each also as a
/// sub-client. Cloning shares the connection.
#[derive(Clone)]
pub struct Client {
    conn: Conn,
}

impl Client {
    /// Connects from the calling Testbed client node. `endpoints` name servers as `s1:2379`,
    /// `http://s2:2379` or by address (`10.0.0.3:2379`, what [`crate::testbed::Ctx::endpoints`]
    /// gives); the client reaches every server whatever it names.
    ///
    /// Errors: `Error::InvalidArgs` for no endpoints, `Error::EndpointError` for one that names no
    /// server, `Error::Internal` when called outside a Testbed client node.
    pub async fn connect<E: AsRef<str>, S: AsRef<[E]>>(endpoints: S, options: Option<ConnectOptions>) -> Result<Self> {
        let env = current_node().ok_or_else(|| {
            Error::Internal("Client::connect is called outside a Testbed client node (coordsim::testbed)".into())
        })?;
        let endpoints = endpoints.as_ref();
        if endpoints.is_empty() {
            return Err(Error::InvalidArgs("no endpoints given".into()));
        }
        let mut ids = Vec::new();
        for endpoint in endpoints {
            ids.push(server_of(&env, endpoint.as_ref())?);
        }
        let local = SocketAddr::new(env.addr.ip(), 0);
        let client = sim_client::Client::connect(local, named_servers(&env, &ids), env.clock.clone())
            .await
            .map_err(|e| Error::Internal(format!("the client node could not bind an address: {e}")))?;
        let timeout = options.and_then(|o| o.timeout);
        Ok(Client { conn: Conn { client, env, timeout } })
    }

    /// The KV service's client, sharing this connection.
    pub fn kv_client(&self) -> KvClient {
        KvClient { conn: self.conn.clone() }
    }

    /// The Lease service's client, sharing this connection.
    pub fn lease_client(&self) -> LeaseClient {
        LeaseClient { conn: self.conn.clone() }
    }

    /// The Watch service's client, sharing this connection.
    pub fn watch_client(&self) -> WatchClient {
        WatchClient { conn: self.conn.clone() }
    }

    /// The Lock service's client, sharing this connection.
    pub fn lock_client(&self) -> LockClient {
        LockClient { conn: self.conn.clone() }
    }

    /// The Maintenance service's client (status), sharing this connection.
    pub fn maintenance_client(&self) -> MaintenanceClient {
        MaintenanceClient { conn: self.conn.clone() }
    }

    /// The Cluster service's client (member_list), sharing this connection.
    pub fn cluster_client(&self) -> ClusterClient {
        ClusterClient { conn: self.conn.clone() }
    }

    /// [`MaintenanceClient::status`], on this client's connection.
    pub async fn status(&mut self) -> Result<StatusResponse> {
        self.maintenance_client().status().await
    }

    /// [`ClusterClient::member_list`].
    pub async fn member_list(&mut self) -> Result<MemberListResponse> {
        self.cluster_client().member_list().await
    }

    /// The Election service's client, sharing this connection.
    pub fn election_client(&self) -> ElectionClient {
        ElectionClient { conn: self.conn.clone() }
    }

    /// [`KvClient::put`], on this client's connection.
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        self.kv_client().put(key, value, options).await
    }

    /// [`KvClient::get`], on this client's connection.
    pub async fn get(&mut self, key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Result<GetResponse> {
        self.kv_client().get(key, options).await
    }

    /// [`KvClient::delete`], on this client's connection.
    pub async fn delete(&mut self, key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Result<DeleteResponse> {
        self.kv_client().delete(key, options).await
    }

    /// [`KvClient::compact`], on this client's connection.
    pub async fn compact(&mut self, revision: i64, options: Option<CompactionOptions>) -> Result<CompactionResponse> {
        self.kv_client().compact(revision, options).await
    }

    /// [`KvClient::txn`], on this client's connection.
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        self.kv_client().txn(txn).await
    }

    /// [`WatchClient::watch`], on this client's connection.
    pub async fn watch(&mut self, key: impl Into<Vec<u8>>, options: Option<WatchOptions>) -> Result<WatchStream> {
        self.watch_client().watch(key, options).await
    }

    /// [`LeaseClient::grant`], on this client's connection.
    pub async fn lease_grant(&mut self, ttl: i64, options: Option<LeaseGrantOptions>) -> Result<LeaseGrantResponse> {
        self.lease_client().grant(ttl, options).await
    }

    /// [`LeaseClient::revoke`], on this client's connection.
    pub async fn lease_revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        self.lease_client().revoke(id).await
    }

    /// [`LeaseClient::keep_alive`], on this client's connection.
    pub async fn lease_keep_alive(&mut self, id: i64) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        self.lease_client().keep_alive(id).await
    }

    /// [`LeaseClient::time_to_live`], on this client's connection.
    pub async fn lease_time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        self.lease_client().time_to_live(id, options).await
    }

    /// [`LeaseClient::leases`], on this client's connection.
    pub async fn leases(&mut self) -> Result<LeaseLeasesResponse> {
        self.lease_client().leases().await
    }

    /// [`LockClient::lock`], on this client's connection.
    pub async fn lock(&mut self, name: impl Into<Vec<u8>>, options: Option<LockOptions>) -> Result<LockResponse> {
        self.lock_client().lock(name, options).await
    }

    /// [`LockClient::unlock`], on this client's connection.
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        self.lock_client().unlock(key).await
    }

    /// [`ElectionClient::campaign`], on this client's connection.
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        self.election_client().campaign(name, value, lease).await
    }

    /// [`ElectionClient::proclaim`], on this client's connection.
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        self.election_client().proclaim(value, options).await
    }

    /// [`ElectionClient::leader`], on this client's connection.
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        self.election_client().leader(name).await
    }

    /// [`ElectionClient::observe`], on this client's connection.
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        self.election_client().observe(name).await
    }

    /// [`ElectionClient::resign`], on this client's connection.
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        self.election_client().resign(option).await
    }
}

/// The server an endpoint names: `s2`, `s2:2379`, `http://s2:2379`, `10.0.0.2:2379`.
fn server_of(env: &ClientEnv, endpoint: &str) -> Result<u64> {
    let rest = endpoint.strip_prefix("http://").or_else(|| endpoint.strip_prefix("https://")).unwrap_or(endpoint);
    server_named(env, rest).ok_or_else(|| {
        Error::EndpointError(format!(
            "{endpoint:?} names no server of this cluster (s1..s{}, or 10.0.0.1..10.0.0.{})",
            env.servers.len(),
            env.servers.len()
        ))
    })
}

/// The servers `ids` name, in their order, each once: the members a client is given. A real
/// client reaches only the endpoints it names (each member forwards to the leader for it), so a
/// member it was not given is never a way round a fault.
pub(crate) fn named_servers(env: &ClientEnv, ids: &[u64]) -> Vec<(u64, SocketAddr)> {
    let mut named: Vec<(u64, SocketAddr)> = Vec::new();
    for id in ids {
        if !named.iter().any(|(seen, _)| seen == id)
            && let Some(server) = env.servers.iter().find(|(server, _)| server == id)
        {
            named.push(*server);
        }
    }
    named
}

/// The server `host:port` names (`s2:2379`, `10.0.0.2:2181`; the port is not checked), for the
/// etcd endpoints and the ZooKeeper connect string alike.
pub(crate) fn server_named(env: &ClientEnv, entry: &str) -> Option<u64> {
    let host = entry.rsplit_once(':').map_or(entry, |(host, _)| host);
    let by_name = host.strip_prefix('s').and_then(|n| n.parse::<u64>().ok());
    let found = env.servers.iter().find(|(id, addr)| Some(*id) == by_name || addr.ip().to_string() == host);
    found.map(|(id, _)| *id)
}

/// Bytes as text: the simulated store keeps keys and values as UTF-8 strings.
pub(crate) fn text(bytes: Vec<u8>, field: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::InvalidArgs(format!("{field} is not UTF-8: the simulated store keeps keys and values as text"))
    })
}

//! ZooKeeper's client API with the names and shapes of the zookeeper-client crate (0.11), on the
//! simulated cluster's ZooKeeper view: code written against zookeeper-client compiles against
//! this module by switching one `use` (`use coordsim::zookeeper as zookeeper_client;` under
//! `cfg(madsim)`), and runs inside a [`crate::testbed::Testbed`] client.
//!
//! A client is connected to one server at a time, of those its connect string names (picked at
//! random, as ZooKeeper shuffles its connect string; a server it does not name is never
//! reached); reads are served from that server's state, possibly stale, unless `sync`
//! comes first; writes go through the leader. A write whose reply is lost fails with
//! `ConnectionLoss`: it may have been applied. The session's pings, timers and [`SessionState`]
//! follow zookeeper-client 0.11's (see `session.rs`): a request made while disconnected waits for
//! the next connection, one in flight when the connection is given up fails with `Custom`. Ephemeral nodes carry the
//! session id as `ephemeral_owner`, and go when the session expires.
//!
//! Recorded in the history: a persistent create as a `cas` from absent, `set_data` without a
//! version as a `put`, `delete` without a version as a `delete` (all judged by `linearizable`;
//! ZooKeeper's writes are linearizable); reads, versioned writes, ephemeral and sequential
//! creates and `multi` as `api` calls (ZooKeeper's reads are sequentially consistent, not
//! linearizable, so no read is judged as if it were; the keys an `api` write may change are left
//! out of the key-value checks). The session's grant and pings are lease operations.
//!
//! Not simulated (an error, never a silent difference): ACLs (accepted and ignored), TTL and
//! container nodes, chroots, auth, `get_config`, readonly servers.

mod session;

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, OpId, Return, Touched};
use coordsim_sim::client::zk::{PollError, ZkCallError, ZkClient};
use coordsim_sim::harness::ClientEnv;
use coordsim_sim::store::{Command, CommandResponse};
use coordsim_sim::zk::{self as view, WatchKind, ZkOp, ZkOpResult};

pub use session::{SessionState, StateWatcher};

/// The session timeout when the connector is not given one.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(6);
/// How long one watch long-poll waits on the server.
const WATCH_POLL: Duration = Duration::from_secs(1);

/// zookeeper-client's `Error`, with the variants the simulated ensemble produces.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A path, option or string the call cannot take (the reason says which).
    #[error("bad arguments: {0}")]
    BadArguments(String),
    /// The node (or, for a create, its parent) does not exist.
    #[error("no node")]
    NoNode,
    /// The node's version is not the expected one.
    #[error("bad version")]
    BadVersion,
    /// A create under an ephemeral node.
    #[error("no children for ephemerals")]
    NoChildrenForEphemerals,
    /// A create of a node that exists.
    #[error("node exists")]
    NodeExists,
    /// A delete of a node that has children.
    #[error("not empty")]
    NotEmpty,
    /// The ensemble expired the session: every later call fails so.
    #[error("session expired")]
    SessionExpired,
    /// No reply: for a write, the outcome is unknown.
    #[error("connection loss")]
    ConnectionLoss,
    /// The operation timed out.
    #[error("operation timeout")]
    Timeout,
    /// zookeeper-client's `Custom`: here, a request in flight when the connection was given up
    /// because nothing was heard for the connection timeout ("no response from connection in N
    /// ms"); for a write, the outcome is unknown.
    #[error("{0}")]
    Custom(String),
    /// The client was closed.
    #[error("client closed")]
    ClientClosed,
    /// Not simulated: container and TTL nodes, readonly connections.
    #[error("unimplemented operation")]
    Unimplemented,
    /// A reply the client did not expect, or a call outside a Testbed client node.
    #[error("unexpected error: {0}")]
    UnexpectedError(String),
}

/// zookeeper-client's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<view::ZkError> for Error {
    fn from(error: view::ZkError) -> Error {
        match error {
            view::ZkError::NoNode(_) => Error::NoNode,
            view::ZkError::NodeExists(_) => Error::NodeExists,
            view::ZkError::BadVersion { .. } => Error::BadVersion,
            view::ZkError::NotEmpty(_) => Error::NotEmpty,
            view::ZkError::NoChildrenForEphemerals(_) => Error::NoChildrenForEphemerals,
            view::ZkError::SessionExpired(_) => Error::SessionExpired,
            view::ZkError::BadArguments(reason) => Error::BadArguments(reason),
        }
    }
}

impl From<ZkCallError> for Error {
    fn from(error: ZkCallError) -> Error {
        match error {
            ZkCallError::ConnectionLoss(_) => Error::ConnectionLoss,
            ZkCallError::Zk(error) => error.into(),
        }
    }
}

/// How a request of the session did not get its answer.
enum Failure {
    /// The servers' answer, or no answer from the server the request went to.
    Call(ZkCallError),
    /// The session's connection was given up, or the session ended, with the request in flight:
    /// it may have taken effect.
    Cut(Error),
    /// The session ended before the request went out: it did not happen.
    Unsent(Error),
}

/// The error of every request of a session that ended in `state`; `None` while it lives.
fn ended_error(state: SessionState) -> Option<Error> {
    match state {
        SessionState::Expired => Some(Error::SessionExpired),
        SessionState::Closed => Some(Error::ClientClosed),
        SessionState::AuthFailed => Some(Error::UnexpectedError("authentication failed".into())),
        _ => None,
    }
}

impl From<Failure> for Error {
    fn from(failure: Failure) -> Error {
        match failure {
            Failure::Call(error) => error.into(),
            Failure::Cut(error) | Failure::Unsent(error) => error,
        }
    }
}

impl From<view::ZkError> for Failure {
    fn from(error: view::ZkError) -> Failure {
        Failure::Call(ZkCallError::Zk(error))
    }
}

impl Failure {
    /// The request may have taken effect.
    fn unknown(&self) -> bool {
        matches!(self, Failure::Cut(_) | Failure::Call(ZkCallError::ConnectionLoss(_)))
    }
}

/// A znode's metadata (ZooKeeper's Stat). `ctime`, `mtime`, `pzxid`, `cversion` and `aversion`
/// are not kept by the simulated view and read 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// The zxid that created the node: a lock node's fencing token.
    pub czxid: i64,
    /// The zxid of the last change to its data.
    pub mzxid: i64,
    /// Not kept by the simulated view: 0.
    pub pzxid: i64,
    /// Not kept by the simulated view: 0.
    pub ctime: i64,
    /// Not kept by the simulated view: 0.
    pub mtime: i64,
    /// Changes to its data since creation (0 after the create).
    pub version: i32,
    /// Not kept by the simulated view: 0.
    pub cversion: i32,
    /// Not kept by the simulated view: 0.
    pub aversion: i32,
    /// The owning session's id for an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
    /// Length of the node's data, in bytes.
    pub data_length: i32,
    /// Number of the node's children.
    pub num_children: i32,
}

impl Stat {
    fn from_view(stat: &view::Stat) -> Stat {
        Stat {
            czxid: stat.czxid,
            mzxid: stat.mzxid,
            version: stat.version as i32,
            ephemeral_owner: stat.ephemeral_owner,
            data_length: stat.data_length as i32,
            num_children: stat.num_children as i32,
            ..Stat::default()
        }
    }
}

/// How a znode is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
    /// Not simulated: creates fail with `Unimplemented`.
    Container,
}

impl CreateMode {
    /// Options with this mode (ACLs are accepted and ignored).
    pub const fn with_acls(self, acls: Acls<'_>) -> CreateOptions<'_> {
        CreateOptions { mode: self, ttl: None, _acls: acls }
    }

    fn to_view(self) -> Result<view::CreateMode> {
        Ok(match self {
            CreateMode::Persistent => view::CreateMode::Persistent,
            CreateMode::PersistentSequential => view::CreateMode::PersistentSequential,
            CreateMode::Ephemeral => view::CreateMode::Ephemeral,
            CreateMode::EphemeralSequential => view::CreateMode::EphemeralSequential,
            CreateMode::Container => return Err(Error::Unimplemented),
        })
    }
}

/// ACLs: accepted for source compatibility, not enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acls<'a> {
    _lifetime: PhantomData<&'a ()>,
}

impl Acls<'static> {
    /// Accepted, not enforced: the simulated view has no ACLs.
    pub const fn anyone_all() -> Acls<'static> {
        Acls { _lifetime: PhantomData }
    }

    /// Accepted, not enforced: the simulated view has no ACLs.
    pub const fn anyone_read() -> Acls<'static> {
        Acls { _lifetime: PhantomData }
    }

    /// Accepted, not enforced: the simulated view has no ACLs.
    pub const fn creator_all() -> Acls<'static> {
        Acls { _lifetime: PhantomData }
    }
}

/// Options of `create`.
#[derive(Clone, Copy, Debug)]
pub struct CreateOptions<'a> {
    mode: CreateMode,
    ttl: Option<Duration>,
    _acls: Acls<'a>,
}

impl CreateOptions<'_> {
    /// Not simulated: creates with a TTL fail with `Unimplemented`.
    pub const fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// A sequential node's sequence number (-1 for other nodes), printed in ten digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreateSequence(i64);

impl CreateSequence {
    /// The sequence number of a sequential node (-1 for other nodes).
    pub fn into_i64(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for CreateSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:010}", self.0)
    }
}

/// A session's id: compare it with a node's `Stat::ephemeral_owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub i64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// What a watch notification says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The session's state changed (`session_state` says to what); the path is empty.
    Session,
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A watch notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened (a node event, or `Session` for a change of session state).
    pub event_type: EventType,
    /// The session's state when the event was delivered.
    pub session_state: SessionState,
    /// The node the event is about (empty for session events).
    pub path: String,
    /// The zxid of the change (as ZooKeeper 3.9 sends it).
    pub zxid: i64,
}

impl WatchedEvent {
    fn node(event: &view::WatchedEvent) -> WatchedEvent {
        WatchedEvent {
            event_type: match event.kind {
                view::EventType::NodeCreated => EventType::NodeCreated,
                view::EventType::NodeDeleted => EventType::NodeDeleted,
                view::EventType::NodeDataChanged => EventType::NodeDataChanged,
                view::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
            },
            session_state: SessionState::SyncConnected,
            path: event.path.clone(),
            zxid: event.zxid,
        }
    }

    fn session(state: SessionState) -> WatchedEvent {
        WatchedEvent { event_type: EventType::Session, session_state: state, path: String::new(), zxid: -1 }
    }
}

/// What a persistent watch covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddWatchMode {
    /// Data and child changes of the node.
    Persistent,
    /// Creation, data change and deletion of the node and every descendant.
    PersistentRecursive,
}

/// The client's connection and session, shared by its clones and watchers.
#[derive(Clone)]
struct Conn {
    zk: ZkClient,
    env: ClientEnv,
    session: Arc<session::Shared>,
    timeout: Duration,
}

impl Conn {
    fn invoke(&self, call: Call) -> OpId {
        self.env.recorder.invoke(&self.env.name, call)
    }

    fn ok(&self, op: OpId, ret: Return) {
        self.env.recorder.ok(&self.env.name, op, ret);
    }

    fn api(&self, method: &str, detail: String, writes: Vec<Touched>) -> OpId {
        self.invoke(Call::Api { api: "zookeeper".into(), method: method.into(), detail, writes, reads: Vec::new() })
    }

    /// Records how a call that did not succeed ended and returns the error.
    fn lost(&self, op: OpId, failure: impl Into<Failure>) -> Error {
        let failure = failure.into();
        let unknown = failure.unknown();
        let error = Error::from(failure);
        match unknown {
            true => self.env.recorder.info(&self.env.name, op, error.to_string()),
            false => self.env.recorder.fail(&self.env.name, op, error.to_string()),
        }
        error
    }

    /// Records how a call that did not succeed ended: a lost reply may have taken effect.
    fn failed(&self, op: OpId, error: &Error) {
        match error {
            Error::ConnectionLoss | Error::Custom(_) => self.env.recorder.info(&self.env.name, op, error.to_string()),
            _ => self.env.recorder.fail(&self.env.name, op, error.to_string()),
        }
    }

    /// Runs one request of the session, as zookeeper-client 0.11 does (see `session.rs`): a
    /// request made while disconnected waits for the next connection (or fails when the session
    /// ends); one in flight when the connection is given up fails with `Custom`, and with the
    /// session's end when it ends. An answer from a server counts as hearing from it.
    async fn request<T>(
        &self,
        call: impl std::future::Future<Output = std::result::Result<T, ZkCallError>>,
    ) -> std::result::Result<T, Failure> {
        if let Some(ended) = ended_error(self.session.until_connected_or_ended().await) {
            return Err(Failure::Unsent(ended));
        }
        let call = std::pin::pin!(call);
        let lost = std::pin::pin!(self.session.until_not_connected());
        match futures::future::select(call, lost).await {
            futures::future::Either::Left((result, _)) => {
                if !matches!(result, Err(ZkCallError::ConnectionLoss(_))) {
                    self.session.heard(self.env.clock.now());
                }
                result.map_err(Failure::Call)
            }
            futures::future::Either::Right(_) => {
                Err(Failure::Cut(ended_error(self.session.state()).unwrap_or_else(|| {
                    Error::Custom(format!(
                        "no response from connection in {}ms",
                        self.session.timers.connection.as_millis()
                    ))
                })))
            }
        }
    }

    fn live(&self) -> Result<()> {
        match self.session.state() {
            SessionState::Expired => Err(Error::SessionExpired),
            SessionState::Closed => Err(Error::ClientClosed),
            _ => Ok(()),
        }
    }
}

/// zookeeper-client's `Connector`: session options, then `connect`.
#[derive(Clone, Debug)]
pub struct Connector {
    session_timeout: Duration,
    connection_timeout: Duration,
}

impl Connector {
    /// The session timeout (default [`DEFAULT_SESSION_TIMEOUT`]); the ensemble expires the
    /// session when it hears nothing from the client for that long (on the leader's clock).
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// [`Connector::with_session_timeout`] in place.
    pub fn session_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a connection may stay silent before the client gives it up (and how long one
    /// attempt to connect may take); zero (the default) for 2/5 of the session timeout. As in
    /// zookeeper-client, a value above 3/5 of the session timeout is ignored.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// [`Connector::with_connection_timeout`] in place.
    pub fn connection_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connection_timeout = timeout;
        self
    }

    /// Not simulated: a readonly connector's `connect` fails with `Unimplemented`.
    pub fn with_readonly(self, readonly: bool) -> Self {
        if readonly { Connector { session_timeout: Duration::ZERO, ..self } } else { self }
    }

    /// Opens a session from the calling Testbed client node. `cluster`: `host:port` entries
    /// separated by commas, each naming a server (`s1:2181`, `10.0.0.1:2181`), as
    /// [`crate::testbed::Ctx::zookeeper_cluster`] gives. Errors: `BadArguments` for an entry that
    /// names no server, a chroot, or a session timeout below 1 s; `ConnectionLoss` when no server
    /// answered the session's creation within the timeout; `UnexpectedError` outside a Testbed
    /// client node.
    pub async fn connect(self, cluster: &str) -> Result<Client> {
        if self.session_timeout.is_zero() {
            return Err(Error::Unimplemented);
        }
        if self.session_timeout < coordsim_sim::scenario::TTL_MIN {
            return Err(Error::BadArguments(format!(
                "session timeout {:?} is below the simulated ensemble's minimum {:?}",
                self.session_timeout,
                coordsim_sim::scenario::TTL_MIN
            )));
        }
        let env = crate::etcd::current_node().ok_or_else(|| {
            Error::UnexpectedError("connect is called outside a Testbed client node (coordsim::testbed)".into())
        })?;
        let ids = check_cluster(&env, cluster)?;
        let local = std::net::SocketAddr::new(env.addr.ip(), 0);
        let servers = crate::etcd::named_servers(&env, &ids);
        let client = coordsim_sim::client::Client::connect(local, servers, env.clock.clone())
            .await
            .map_err(|e| Error::UnexpectedError(format!("the client node could not bind an address: {e}")))?;
        let ttl_ms = self.session_timeout.as_millis() as u64;
        let op = env.recorder.invoke(&env.name, Call::LeaseGrant { ttl_ms });
        let lease = match client.write(Command::LeaseGrant { id: 0, ttl_ms }, self.session_timeout).await {
            Ok(CommandResponse::LeaseGrant { id, ttl_ms, .. }) => {
                env.recorder.ok(&env.name, op, Return::LeaseGranted { lease: id, ttl_ms });
                id
            }
            Ok(other) => {
                env.recorder.fail(&env.name, op, format!("{other:?}"));
                return Err(Error::UnexpectedError(format!("unexpected reply {other:?}")));
            }
            Err(error) => {
                env.recorder.info(&env.name, op, error.to_string());
                return Err(Error::ConnectionLoss);
            }
        };
        let timers = session::Timers::new(self.session_timeout, self.connection_timeout);
        let shared = session::Shared::new(timers, env.clock.now());
        madsim::task::spawn(session::keep_session(client.clone(), env.clone(), lease, shared.clone()));
        let zk = ZkClient::new(&client, lease);
        Ok(Client { conn: Conn { zk, env, session: shared, timeout: self.session_timeout } })
    }
}

/// The servers the connect string names, in its order (a session connects to these alone).
fn check_cluster(env: &ClientEnv, cluster: &str) -> Result<Vec<u64>> {
    if cluster.contains('/') {
        return Err(Error::BadArguments("chroot paths are not simulated".into()));
    }
    let entries: Vec<&str> = cluster.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
    if entries.is_empty() {
        return Err(Error::BadArguments("no servers in the connect string".into()));
    }
    let mut ids = Vec::new();
    for entry in entries {
        let Some(id) = crate::etcd::server_named(env, entry) else {
            return Err(Error::BadArguments(format!(
                "{entry:?} names no server of this ensemble (s1..s{})",
                env.servers.len()
            )));
        };
        ids.push(id);
    }
    Ok(ids)
}

/// zookeeper-client's `Client`: one session. Cloning shares it.
#[derive(Clone)]
pub struct Client {
    conn: Conn,
}

impl Client {
    /// A connector with the default session timeout and no connection timeout.
    pub fn connector() -> Connector {
        Connector { session_timeout: DEFAULT_SESSION_TIMEOUT, connection_timeout: Duration::ZERO }
    }

    /// [`Connector::connect`] with the default options.
    pub async fn connect(cluster: &str) -> Result<Client> {
        Client::connector().connect(cluster).await
    }

    /// The session's id: ephemeral nodes it creates carry it as `ephemeral_owner`.
    pub fn session_id(&self) -> SessionId {
        SessionId(self.conn.zk.session)
    }

    /// The session timeout asked for (the simulated ensemble grants it as asked).
    pub fn session_timeout(&self) -> Duration {
        self.conn.timeout
    }

    /// The session's state now.
    pub fn state(&self) -> SessionState {
        self.conn.session.state()
    }

    /// A watcher of the session's state changes, from its state now.
    pub fn state_watcher(&self) -> StateWatcher {
        StateWatcher { seen: self.conn.session.state(), shared: self.conn.session.clone() }
    }

    /// Ends the session's pings and every later call (`ClientClosed`); the session itself expires
    /// on the ensemble after its timeout (zookeeper-client closes it on drop; here nodes live on
    /// until then).
    pub fn close(&self) {
        self.conn.session.set(SessionState::Closed);
    }

    /// Creates `path` (sequential modes append the ten-digit sequence number). Errors:
    /// `NodeExists`, `NoNode` (no parent), `NoChildrenForEphemerals`, `ConnectionLoss` (unknown
    /// outcome), `SessionExpired`, `Unimplemented` (container or TTL).
    pub async fn create(&self, path: &str, data: &[u8], options: &CreateOptions<'_>) -> Result<(Stat, CreateSequence)> {
        self.conn.live()?;
        if options.ttl.is_some() {
            return Err(Error::Unimplemented);
        }
        let mode = options.mode.to_view()?;
        let data = text(data)?;
        let plain = mode == view::CreateMode::Persistent;
        let op = if plain {
            self.conn.invoke(Call::Cas { key: path.to_string(), expected: None, new: data.clone() })
        } else {
            let touched =
                if mode.is_sequential() { Touched::Prefix(path.to_string()) } else { Touched::Key(path.to_string()) };
            self.conn.api("create", format!("{path} ({mode:?}) = {data}"), vec![touched])
        };
        let ops = vec![ZkOp::Create { path: path.to_string(), data, mode }];
        match self.conn.request(self.conn.zk.multi_at(ops)).await {
            Ok((_, Ok(mut results))) => match results.pop() {
                Some(ZkOpResult::Created { path: created, stat }) => {
                    let ret = match plain {
                        true => Return::Cas { swapped: true, revision: stat.czxid },
                        // An ephemeral node's owner is the session: its end (the session's
                        // `lease_expiry`) is when the node goes.
                        false => Return::Api {
                            detail: created.clone(),
                            revision: stat.czxid,
                            ephemeral_owner: (stat.ephemeral_owner != 0).then_some(stat.ephemeral_owner),
                        },
                    };
                    self.conn.ok(op, ret);
                    let sequence = match mode.is_sequential() {
                        true => view::sequence_of(view::name_of(&created)).map_or(-1, |s| s as i64),
                        false => -1,
                    };
                    Ok((Stat::from_view(&stat), CreateSequence(sequence)))
                }
                other => {
                    let error = Error::UnexpectedError(format!("a create answered {other:?}"));
                    self.conn.failed(op, &error);
                    Err(error)
                }
            },
            Ok((zxid, Err(view::ZkError::NodeExists(_)))) if plain => {
                self.conn.ok(op, Return::Cas { swapped: false, revision: zxid });
                Err(Error::NodeExists)
            }
            Ok((_, Err(error))) => Err(self.conn.lost(op, error)),
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// Deletes `path` if its version is `expected_version` (any with `None`). Errors: `NoNode`,
    /// `BadVersion`, `NotEmpty`, `ConnectionLoss` (unknown outcome).
    pub async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<()> {
        self.conn.live()?;
        let op = match expected_version {
            None => self.conn.invoke(Call::Delete { key: path.to_string() }),
            Some(v) => self.conn.api("delete", format!("{path} at version {v}"), vec![Touched::Key(path.to_string())]),
        };
        let version = expected_version.map_or(view::ANY_VERSION, i64::from);
        match self.conn.request(self.conn.zk.multi_at(vec![ZkOp::Delete { path: path.to_string(), version }])).await {
            Ok((zxid, Ok(_))) => {
                let ret = match expected_version {
                    None => Return::Deleted { count: 1, revision: zxid },
                    Some(_) => Return::Api { detail: "deleted".into(), revision: zxid, ephemeral_owner: None },
                };
                self.conn.ok(op, ret);
                Ok(())
            }
            Ok((zxid, Err(view::ZkError::NoNode(_)))) if expected_version.is_none() => {
                self.conn.ok(op, Return::Deleted { count: 0, revision: zxid });
                Err(Error::NoNode)
            }
            Ok((_, Err(error))) => Err(self.conn.lost(op, error)),
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// Replaces `path`'s data if its version is `expected_version` (any with `None`); the new stat.
    pub async fn set_data(&self, path: &str, data: &[u8], expected_version: Option<i32>) -> Result<Stat> {
        self.conn.live()?;
        let data = text(data)?;
        let op = match expected_version {
            None => self.conn.invoke(Call::Put { key: path.to_string(), value: data.clone() }),
            Some(v) => {
                self.conn.api("set_data", format!("{path}={data} at version {v}"), vec![Touched::Key(path.to_string())])
            }
        };
        let version = expected_version.map_or(view::ANY_VERSION, i64::from);
        match self
            .conn
            .request(self.conn.zk.multi_at(vec![ZkOp::SetData { path: path.to_string(), data, version }]))
            .await
        {
            Ok((_, Ok(mut results))) => match results.pop() {
                Some(ZkOpResult::SetData { stat }) => {
                    let ret = match expected_version {
                        None => Return::Put { revision: stat.mzxid },
                        Some(_) => Return::Api {
                            detail: format!("version {}", stat.version),
                            revision: stat.mzxid,
                            ephemeral_owner: None,
                        },
                    };
                    self.conn.ok(op, ret);
                    Ok(Stat::from_view(&stat))
                }
                other => {
                    let error = Error::UnexpectedError(format!("a setData answered {other:?}"));
                    self.conn.failed(op, &error);
                    Err(error)
                }
            },
            Ok((_, Err(error))) => Err(self.conn.lost(op, error)),
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// The node's data and stat, from the connected server (possibly stale). `NoNode` if absent.
    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat, _) = self.read_data(path).await?;
        Ok((data, stat))
    }

    /// [`Client::get_data`], and a one-shot watch on the node's data and deletion.
    pub async fn get_and_watch_data(&self, path: &str) -> Result<(Vec<u8>, Stat, OneshotWatcher)> {
        let (data, stat, zxid) = self.read_data(path).await?;
        Ok((data, stat, self.oneshot(path, WatchKind::Data, zxid)))
    }

    async fn read_data(&self, path: &str) -> Result<(Vec<u8>, Stat, i64)> {
        self.conn.live()?;
        let op = self.conn.api("get_data", path.to_string(), Vec::new());
        match self.conn.request(self.conn.zk.get_data(path, self.conn.timeout)).await {
            Ok(((data, stat), zxid)) => {
                self.conn.ok(op, Return::Api { detail: data.clone(), revision: zxid, ephemeral_owner: None });
                Ok((data.into_bytes(), Stat::from_view(&stat), zxid))
            }
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// The node's stat, `None` if it does not exist.
    pub async fn check_stat(&self, path: &str) -> Result<Option<Stat>> {
        Ok(self.read_stat(path).await?.0)
    }

    /// [`Client::check_stat`], and a one-shot watch that fires on the node's creation, data
    /// change or deletion.
    pub async fn check_and_watch_stat(&self, path: &str) -> Result<(Option<Stat>, OneshotWatcher)> {
        let (stat, zxid) = self.read_stat(path).await?;
        Ok((stat, self.oneshot(path, WatchKind::Data, zxid)))
    }

    async fn read_stat(&self, path: &str) -> Result<(Option<Stat>, i64)> {
        self.conn.live()?;
        let op = self.conn.api("exists", path.to_string(), Vec::new());
        match self.conn.request(self.conn.zk.exists(path, self.conn.timeout)).await {
            Ok((stat, zxid)) => {
                self.conn.ok(
                    op,
                    Return::Api {
                        detail: if stat.is_some() { "exists" } else { "absent" }.into(),
                        revision: zxid,
                        ephemeral_owner: None,
                    },
                );
                Ok((stat.as_ref().map(Stat::from_view), zxid))
            }
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// The node's children's names, sorted.
    pub async fn list_children(&self, path: &str) -> Result<Vec<String>> {
        Ok(self.read_children(path).await?.0)
    }

    /// [`Client::list_children`], and a one-shot watch on the children (and the node's deletion).
    pub async fn list_and_watch_children(&self, path: &str) -> Result<(Vec<String>, OneshotWatcher)> {
        let (children, zxid) = self.read_children(path).await?;
        Ok((children, self.oneshot(path, WatchKind::Children, zxid)))
    }

    /// The children and the node's stat.
    pub async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let (children, _) = self.read_children(path).await?;
        let stat = self.check_stat(path).await?.ok_or(Error::NoNode)?;
        Ok((children, stat))
    }

    /// [`Client::get_children`], and a one-shot watch on the children.
    pub async fn get_and_watch_children(&self, path: &str) -> Result<(Vec<String>, Stat, OneshotWatcher)> {
        let (children, zxid) = self.read_children(path).await?;
        let stat = self.check_stat(path).await?.ok_or(Error::NoNode)?;
        Ok((children, stat, self.oneshot(path, WatchKind::Children, zxid)))
    }

    async fn read_children(&self, path: &str) -> Result<(Vec<String>, i64)> {
        self.conn.live()?;
        let op = self.conn.api("get_children", path.to_string(), Vec::new());
        match self.conn.request(self.conn.zk.get_children(path, self.conn.timeout)).await {
            Ok((children, zxid)) => {
                self.conn.ok(op, Return::Api { detail: children.join(","), revision: zxid, ephemeral_owner: None });
                Ok((children, zxid))
            }
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// A persistent watch on `path` (`Persistent`: the node's data and children;
    /// `PersistentRecursive`: the node and every descendant), from now until dropped.
    pub async fn watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatcher> {
        let (_, zxid) = self.read_stat(path).await?;
        let kind = match mode {
            AddWatchMode::Persistent => WatchKind::Persistent,
            AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
        };
        Ok(PersistentWatcher {
            conn: self.conn.clone(),
            path: path.to_string(),
            kind,
            after: zxid,
            pending: Default::default(),
        })
    }

    /// Makes the connected server catch up with the leader: a read after it is not stale.
    pub async fn sync(&self, path: &str) -> Result<()> {
        self.conn.live()?;
        let op = self.conn.api("sync", path.to_string(), Vec::new());
        match self.conn.request(self.conn.zk.sync(self.conn.timeout)).await {
            Ok(zxid) => {
                self.conn.ok(op, Return::Api { detail: "synced".into(), revision: zxid, ephemeral_owner: None });
                Ok(())
            }
            Err(error) => Err(self.conn.lost(op, error)),
        }
    }

    /// A `multi`: several writes applied all or nothing, in one zxid.
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter { client: self, ops: Vec::new() }
    }

    fn oneshot(&self, path: &str, kind: WatchKind, after: i64) -> OneshotWatcher {
        OneshotWatcher { conn: self.conn.clone(), path: path.to_string(), kind, after }
    }
}

/// A one-shot watch: the first change after the read that set it, or the session's end.
pub struct OneshotWatcher {
    conn: Conn,
    path: String,
    kind: WatchKind,
    after: i64,
}

impl OneshotWatcher {
    /// Waits for the notification; a session that expires (or a closed client) ends the watch
    /// with a `Session` event carrying the terminal state, as ZooKeeper does.
    pub async fn changed(self) -> WatchedEvent {
        let mut after = self.after;
        loop {
            if let Some(event) = next_events(&self.conn, &self.path, self.kind, &mut after).await {
                return event.into_iter().next().unwrap_or_else(|| WatchedEvent::session(self.conn.session.state()));
            }
        }
    }
}

/// A persistent watch: every change, in order, until dropped.
pub struct PersistentWatcher {
    conn: Conn,
    path: String,
    kind: WatchKind,
    after: i64,
    pending: std::collections::VecDeque<WatchedEvent>,
}

impl PersistentWatcher {
    /// The next notification (a `Session` event with the terminal state once the session ends).
    pub async fn changed(&mut self) -> WatchedEvent {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return event;
            }
            if let Some(events) = next_events(&self.conn, &self.path, self.kind, &mut self.after).await {
                if events.is_empty() {
                    return WatchedEvent::session(self.conn.session.state());
                }
                self.pending.extend(events);
            }
        }
    }
}

/// One long-poll of a watch: `Some(events)` when some fired (or `Some(vec![])` when the session
/// ended), `None` to poll again.
async fn next_events(conn: &Conn, path: &str, kind: WatchKind, after: &mut i64) -> Option<Vec<WatchedEvent>> {
    if conn.session.state().is_terminated() {
        return Some(Vec::new());
    }
    match conn.zk.poll_watch(path, kind, *after, WATCH_POLL).await {
        Ok((events, resume)) => {
            *after = resume;
            (!events.is_empty()).then(|| events.iter().map(WatchedEvent::node).collect())
        }
        Err(PollError::Store(_)) | Err(PollError::Call(_)) => {
            conn.env.clock.sleep(Duration::from_millis(100)).await;
            None
        }
    }
}

/// One op's result in a committed `multi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiWriteResult {
    Check,
    Delete,
    Create { path: String, stat: Stat },
    SetData { stat: Stat },
}

/// Why a `multi` failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MultiWriteError {
    #[error("{source}")]
    RequestFailed { source: Error },
    #[error("operation at index {index} failed: {source}")]
    OperationFailed { index: usize, source: Error },
}

/// Collects the ops of a `multi`.
pub struct MultiWriter<'a> {
    client: &'a Client,
    ops: Vec<ZkOp>,
}

impl MultiWriter<'_> {
    /// Adds a check that `path` is at `version`.
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        self.ops.push(ZkOp::Check { path: path.to_string(), version: i64::from(version) });
        Ok(())
    }

    /// Adds a create. Errors: `Unimplemented` for TTL nodes, `BadArguments` for non-UTF-8 data.
    pub fn add_create(&mut self, path: &str, data: &[u8], options: &CreateOptions<'_>) -> Result<()> {
        if options.ttl.is_some() {
            return Err(Error::Unimplemented);
        }
        self.ops.push(ZkOp::Create { path: path.to_string(), data: text(data)?, mode: options.mode.to_view()? });
        Ok(())
    }

    /// Adds a set_data at `expected_version` (any with `None`). Errors: `BadArguments` for non-UTF-8 data.
    pub fn add_set_data(&mut self, path: &str, data: &[u8], expected_version: Option<i32>) -> Result<()> {
        let version = expected_version.map_or(view::ANY_VERSION, i64::from);
        self.ops.push(ZkOp::SetData { path: path.to_string(), data: text(data)?, version });
        Ok(())
    }

    /// Adds a delete at `expected_version` (any with `None`).
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        let version = expected_version.map_or(view::ANY_VERSION, i64::from);
        self.ops.push(ZkOp::Delete { path: path.to_string(), version });
        Ok(())
    }

    /// Applies every op or none.
    pub async fn commit(self) -> std::result::Result<Vec<MultiWriteResult>, MultiWriteError> {
        let conn = &self.client.conn;
        conn.live().map_err(|source| MultiWriteError::RequestFailed { source })?;
        let writes = self
            .ops
            .iter()
            .filter(|op| !matches!(op, ZkOp::Check { .. }))
            .map(|op| match op {
                ZkOp::Create { path, mode, .. } if mode.is_sequential() => Touched::Prefix(path.clone()),
                other => Touched::Key(other.path().to_string()),
            })
            .collect();
        let op = conn.api("multi", format!("{} ops", self.ops.len()), writes);
        match conn.request(conn.zk.multi_indexed(self.ops)).await {
            Ok((zxid, Ok(results))) => {
                conn.ok(op, Return::Api { detail: "committed".into(), revision: zxid, ephemeral_owner: None });
                Ok(results
                    .into_iter()
                    .map(|result| match result {
                        ZkOpResult::Checked => MultiWriteResult::Check,
                        ZkOpResult::Deleted => MultiWriteResult::Delete,
                        ZkOpResult::Created { path, stat } => {
                            MultiWriteResult::Create { path, stat: Stat::from_view(&stat) }
                        }
                        ZkOpResult::SetData { stat } => MultiWriteResult::SetData { stat: Stat::from_view(&stat) },
                    })
                    .collect())
            }
            Ok((_, Err(failed))) => {
                let source = Error::from(failed.error);
                conn.failed(op, &source);
                Err(MultiWriteError::OperationFailed { index: failed.index, source })
            }
            Err(error) => Err(MultiWriteError::RequestFailed { source: conn.lost(op, error) }),
        }
    }
}

fn text(data: &[u8]) -> Result<String> {
    String::from_utf8(data.to_vec())
        .map_err(|_| Error::BadArguments("data is not UTF-8: the simulated store keeps data as text".into()))
}

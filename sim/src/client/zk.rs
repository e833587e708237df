//! A ZooKeeper client: connected to one server at a time, its session a lease kept alive by
//! [`super::Session`].
//!
//! As ZooKeeper's client library: a write whose reply does not come back fails with
//! `ConnectionLoss` — it may or may not have been applied, and the caller must find out
//! (docs/cases/07) — and the client moves to another server; reads are retried on another
//! server, since they change nothing. The client remembers the newest zxid it has seen and
//! every server it talks to must have applied it first, so it never goes back in time.
//!
//! Under a session's connection state machine ([`super::zk_session`]) the client has one
//! connection, as the Java client's `ClientCnxn` (3.8) does: a request made while disconnected
//! is queued (`queuePacket`) and goes out once a server has validated the session again, or
//! fails with ConnectionLoss when the next connection attempt fails (`SendThread.cleanup`); a
//! request in flight when the connection is given up fails with ConnectionLoss at once, its
//! reply never read. So no recipe request is answered between a connection's loss and the
//! session's validation: a server that has not yet applied the session's expiry cannot hand a
//! disconnected client a stale view of its own nodes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Client;
use crate::rpc::{ClientReply, ClientRequest, ZkReply, ZkRequest, answered_wrongly};
use crate::store::{LeaseId, Revision, StoreError};
use crate::zk::{CreateMode, Stat, WatchKind, WatchedEvent, ZkError, ZkOp, ZkOpResult, ZkWrite};

/// A write's reply must come within this (the connected server may forward it to the leader).
const WRITE_TIMEOUT: Duration = Duration::from_millis(2000);
/// A read or a sync.
const READ_TIMEOUT: Duration = Duration::from_millis(1000);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZkCallError {
    /// No reply: for a write, the outcome is unknown.
    #[error("connection loss: {0}")]
    ConnectionLoss(String),
    #[error(transparent)]
    Zk(#[from] ZkError),
}

/// A connection to one server of the cluster, for one session.
#[derive(Clone)]
pub struct ZkClient {
    client: Client,
    /// Session ID (a lease), 0 for none.
    pub session: LeaseId,
    /// Index of the connected server in the client's server list.
    connected: Arc<Mutex<usize>>,
    /// The newest zxid seen.
    seen: Arc<Mutex<Revision>>,
    /// What the connection's state machine (`super::session`, ZooKeeper recipes) reads: when a
    /// server last answered, and each connection given up.
    link: Arc<Link>,
}

/// When the connected server last answered (local monotonic time), and a count of connections
/// given up (a refused or unanswered request moves the client to the next server, as a dropped
/// connection does).
#[derive(Debug, Default)]
pub struct Link {
    last_heard: Mutex<Option<crate::clock::LocalTime>>,
    drops: Mutex<u64>,
    dropped: tokio::sync::Notify,
    /// The server of the last connection given up (`s2`), and why it was.
    last_drop: Mutex<(String, String)>,
    /// A server answered a request "session expired".
    expired: Mutex<bool>,
    /// Whether recipe requests may go out now.
    gate: Mutex<Gate>,
}

/// Whether a connection is up for the recipe's requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Gate {
    /// No connection state machine keeps this client (the key-value workload's sessionless
    /// clients): every request goes out, each on its own.
    #[default]
    Unmanaged,
    /// Connected: requests go out.
    Open,
    /// Connection given up, the session not yet validated again: requests wait.
    Closed,
}

impl Link {
    pub fn last_heard(&self) -> Option<crate::clock::LocalTime> {
        *self.last_heard.lock().expect("zk link lock poisoned")
    }

    pub fn drops(&self) -> u64 {
        *self.drops.lock().expect("zk link lock poisoned")
    }

    /// Waits until the drop count is past `seen`, or a server said the session expired.
    pub async fn dropped_since(&self, seen: u64) {
        self.wait_until(|link| link.drops() > seen || link.expired()).await;
    }

    /// Waits until `ready` holds, looked at again after every change of the link.
    async fn wait_until(&self, ready: impl Fn(&Link) -> bool) {
        loop {
            let notified = self.dropped.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if ready(self) {
                return;
            }
            notified.await;
        }
    }

    fn heard(&self, at: crate::clock::LocalTime) {
        let mut last = self.last_heard.lock().expect("zk link lock poisoned");
        *last = Some(last.map_or(at, |last| last.max(at)));
    }

    /// Whether a server has answered a request "session expired".
    pub fn expired(&self) -> bool {
        *self.expired.lock().expect("zk link lock poisoned")
    }

    fn mark_expired(&self) {
        *self.expired.lock().expect("zk link lock poisoned") = true;
        self.dropped.notify_waiters();
    }

    /// Why the last connection was given up.
    pub fn last_drop(&self) -> String {
        self.last_drop.lock().expect("zk link lock poisoned").1.clone()
    }

    /// The server of the last connection given up (`s2`).
    pub fn last_dropped_server(&self) -> String {
        self.last_drop.lock().expect("zk link lock poisoned").0.clone()
    }

    fn drop_connection(&self, server: String, reason: String) {
        *self.last_drop.lock().expect("zk link lock poisoned") = (server, reason);
        *self.drops.lock().expect("zk link lock poisoned") += 1;
        let mut gate = self.gate.lock().expect("zk link lock poisoned");
        if *gate == Gate::Open {
            *gate = Gate::Closed;
        }
        drop(gate);
        self.dropped.notify_waiters();
    }

    /// A server took the session (created, or validated on a new connection): requests go out
    /// from now on, and wait while the connection is down. Called by the session's connection
    /// state machine only.
    pub fn connected(&self) {
        *self.gate.lock().expect("zk link lock poisoned") = Gate::Open;
        self.dropped.notify_waiters();
    }

    fn gate(&self) -> Gate {
        *self.gate.lock().expect("zk link lock poisoned")
    }

    /// Waits until a request may go out (`true`) or the connection attempt under way fails
    /// (`false`: the drop count is past `seen`).
    async fn until_open(&self, seen: u64) -> bool {
        self.wait_until(|link| link.gate() != Gate::Closed || link.drops() > seen).await;
        self.gate() != Gate::Closed
    }

    /// Waits until the drop count is past `seen` (a session's expiry does not count).
    async fn until_dropped(&self, seen: u64) {
        self.wait_until(|link| link.drops() > seen).await;
    }
}

impl ZkClient {
    /// Connects to a server picked at random (ZooKeeper shuffles its connect string).
    pub fn new(client: &Client, session: LeaseId) -> ZkClient {
        use madsim::rand::Rng as _;
        let first = madsim::rand::thread_rng().gen_range(0..client.servers.len());
        ZkClient {
            client: client.clone(),
            session,
            connected: Arc::new(Mutex::new(first)),
            seen: Arc::new(Mutex::new(0)),
            link: Arc::default(),
        }
    }

    /// Connects to the server at `index` of the client's server list (modulo its length), for
    /// workloads that spread their clients over the servers evenly.
    pub fn connected_to(client: &Client, session: LeaseId, index: usize) -> ZkClient {
        ZkClient {
            client: client.clone(),
            session,
            connected: Arc::new(Mutex::new(index % client.servers.len())),
            seen: Arc::new(Mutex::new(0)),
            link: Arc::default(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The connection's receipts and drops.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The name of the server the client is connected to (`s2`).
    pub fn connected_server(&self) -> String {
        let index = *self.connected.lock().expect("zk client lock poisoned");
        format!("s{}", self.client.servers[index].0)
    }

    /// Gives the connection up (nothing heard for the read timeout): the next request goes to
    /// the next server.
    pub fn give_up_connection(&self) {
        let mut connected = self.connected.lock().expect("zk client lock poisoned");
        let server = self.client.servers[*connected].0;
        *connected = (*connected + 1) % self.client.servers.len();
        self.link.drop_connection(format!("s{server}"), format!("s{server}: nothing heard for the read timeout"));
    }

    /// Creates a session of `ttl_ms` through the connected server; the session (lease) id and
    /// the TTL granted. The caller sets [`ZkClient::session`] to it.
    pub async fn create_session(&self, ttl_ms: u64, timeout: Duration) -> Result<(LeaseId, u64), ZkCallError> {
        match self.call(ClientRequest::Zk(ZkRequest::CreateSession { ttl_ms }), timeout).await? {
            ClientReply::Write(crate::store::CommandResponse::LeaseGrant { id, ttl_ms, .. }) => Ok((id, ttl_ms)),
            other => answered_wrongly("a session creation", &other),
        }
    }

    /// Pings the session through the connected server (`validate`: on a new connection, its
    /// validation). `Ok(true)`: touched; `Ok(false)`: the ensemble says the session expired.
    pub async fn ping(&self, validate: bool, timeout: Duration) -> Result<bool, ZkCallError> {
        let request = ZkRequest::Ping { session: self.session, validate };
        match self.call(ClientRequest::Zk(request), timeout).await? {
            ClientReply::KeptAlive { .. } => Ok(true),
            ClientReply::LeaseNotFound => Ok(false),
            other => answered_wrongly("a ping", &other),
        }
    }

    /// The newest zxid this client has seen.
    pub fn seen(&self) -> Revision {
        *self.seen.lock().expect("zk client lock poisoned")
    }

    pub async fn create(&self, path: &str, data: &str, mode: CreateMode) -> Result<(String, Stat), ZkCallError> {
        let op = ZkOp::Create { path: path.to_string(), data: data.to_string(), mode };
        match self.multi(vec![op]).await?.pop() {
            Some(ZkOpResult::Created { path, stat }) => Ok((path, stat)),
            other => answered_wrongly("a create", &other),
        }
    }

    pub async fn delete(&self, path: &str, version: i64) -> Result<(), ZkCallError> {
        self.multi(vec![ZkOp::Delete { path: path.to_string(), version }]).await.map(|_| ())
    }

    pub async fn set_data(&self, path: &str, data: &str, version: i64) -> Result<Stat, ZkCallError> {
        let op = ZkOp::SetData { path: path.to_string(), data: data.to_string(), version };
        match self.multi(vec![op]).await?.pop() {
            Some(ZkOpResult::SetData { stat }) => Ok(stat),
            other => answered_wrongly("a setData", &other),
        }
    }

    /// Several ops, all or nothing (one op: a plain write). One attempt: see the module docs.
    pub async fn multi(&self, ops: Vec<ZkOp>) -> Result<Vec<ZkOpResult>, ZkCallError> {
        let (_, result) = self.multi_at(ops).await?;
        result.map_err(ZkCallError::Zk)
    }

    /// [`ZkClient::multi`] with the zxid of the reply: the write's own zxid, or for a rejected
    /// write the answering server's zxid at the time.
    pub async fn multi_at(&self, ops: Vec<ZkOp>) -> Result<(Revision, Result<Vec<ZkOpResult>, ZkError>), ZkCallError> {
        let (zxid, result) = self.multi_indexed(ops).await?;
        Ok((zxid, result.map_err(|error| error.error)))
    }

    /// [`ZkClient::multi_at`] that says which op failed.
    pub async fn multi_indexed(
        &self,
        ops: Vec<ZkOp>,
    ) -> Result<(Revision, Result<Vec<ZkOpResult>, crate::zk::ZkOpError>), ZkCallError> {
        let request = ZkRequest::Write(ZkWrite { session: self.session, ops });
        let (zxid, result) = self.attempt(request, WRITE_TIMEOUT).await?.into_write();
        self.saw(zxid);
        if matches!(&result, Err(e) if matches!(e.error, ZkError::SessionExpired(_))) {
            self.link.mark_expired();
        }
        Ok((zxid, result))
    }

    /// `exists`, and the zxid it was served at (a watch set by it sees the changes after that).
    pub async fn exists(&self, path: &str, budget: Duration) -> Result<(Option<Stat>, Revision), ZkCallError> {
        let request = ZkRequest::Exists { path: path.to_string(), seen: self.seen() };
        let (zxid, result) = self.read(request, budget).await?.into_exists();
        Ok((result?, zxid))
    }

    pub async fn get_data(&self, path: &str, budget: Duration) -> Result<((String, Stat), Revision), ZkCallError> {
        let request = ZkRequest::GetData { path: path.to_string(), seen: self.seen() };
        let (zxid, result) = self.read(request, budget).await?.into_data();
        Ok((result?, zxid))
    }

    /// `getData` that answers `None` for a node that does not exist, with the zxid it was read
    /// at either way.
    pub async fn get_data_or_none(
        &self,
        path: &str,
        budget: Duration,
    ) -> Result<(Option<(String, Stat)>, Revision), ZkCallError> {
        let request = ZkRequest::GetData { path: path.to_string(), seen: self.seen() };
        match self.read(request, budget).await?.into_data() {
            (zxid, Err(ZkError::NoNode(_))) => Ok((None, zxid)),
            (zxid, result) => Ok((Some(result?), zxid)),
        }
    }

    /// The sorted child names, and the zxid they were read at.
    pub async fn get_children(&self, path: &str, budget: Duration) -> Result<(Vec<String>, Revision), ZkCallError> {
        let request = ZkRequest::GetChildren { path: path.to_string(), seen: self.seen() };
        let (zxid, result) = self.read(request, budget).await?.into_children();
        Ok((result?, zxid))
    }

    /// Makes the connected server catch up with the leader, so that the next read is not stale.
    pub async fn sync(&self, budget: Duration) -> Result<Revision, ZkCallError> {
        Ok(self.read(ZkRequest::Sync, budget).await?.into_synced())
    }

    /// One long-poll for the notifications of a watch on `path` of `kind` set at zxid `after`.
    /// Returns them (empty if none came within `wait`) and the zxid to resume after.
    pub async fn poll_watch(
        &self,
        path: &str,
        kind: WatchKind,
        after: Revision,
        wait: Duration,
    ) -> Result<(Vec<WatchedEvent>, Revision), PollError> {
        let request = ZkRequest::Watch { path: path.to_string(), kind, after, wait_ms: wait.as_millis() as u64 };
        match self.attempt(request, wait + READ_TIMEOUT).await.map(ZkReply::into_watch) {
            Ok((zxid, Ok(events))) => {
                let resume = events.last().map_or(after.max(zxid), |event| event.zxid);
                Ok((events, resume))
            }
            Ok((_, Err(error))) => Err(PollError::Store(error)),
            Err(error) => Err(PollError::Call(error)),
        }
    }

    /// Retries a read on the next server until `budget` of local time is spent.
    async fn read(&self, request: ZkRequest, budget: Duration) -> Result<ZkReply, ZkCallError> {
        let clock = self.client.clock().clone();
        let deadline = clock.now().plus_ms(budget.as_millis() as u64);
        loop {
            match self.attempt(request.clone(), READ_TIMEOUT).await {
                Ok(reply) => {
                    if let Some(zxid) = reply_zxid(&reply) {
                        self.saw(zxid);
                    }
                    return Ok(reply);
                }
                Err(error) if clock.now() >= deadline => return Err(error),
                Err(_) => clock.sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// One request to the connected server, within `timeout` of local time; on any failure,
    /// connect to the next one. Under a session's state machine, it waits for the connection
    /// (see the module docs) and fails if the connection is given up while it is in flight.
    async fn attempt(&self, request: ZkRequest, timeout: Duration) -> Result<ZkReply, ZkCallError> {
        let clock = self.client.clock().clone();
        let deadline = clock.now().plus(timeout);
        let managed = self.link.gate() != Gate::Unmanaged;
        if managed {
            let seen = self.link.drops();
            let open = std::pin::pin!(self.link.until_open(seen));
            let late = std::pin::pin!(clock.sleep_until(deadline));
            let open = match futures::future::select(open, late).await {
                futures::future::Either::Left((open, _)) => open,
                futures::future::Either::Right(_) => false,
            };
            if !open {
                return Err(ZkCallError::ConnectionLoss(format!(
                    "{}: not connected (the request waited for the session's validation)",
                    self.connected_server()
                )));
            }
        }
        let budget = clock.now().until(deadline).max(Duration::from_millis(1));
        let seen = self.link.drops();
        let call = std::pin::pin!(self.call(ClientRequest::Zk(request), budget));
        let reply = if managed {
            let cut = std::pin::pin!(self.link.until_dropped(seen));
            match futures::future::select(call, cut).await {
                futures::future::Either::Left((reply, _)) => reply?,
                futures::future::Either::Right(_) => {
                    return Err(ZkCallError::ConnectionLoss(format!(
                        "{} (the request was in flight)",
                        self.link.last_drop()
                    )));
                }
            }
        } else {
            call.await?
        };
        Ok(reply.into_zk())
    }

    /// One call to the connected server, answered by what the request asks for (`Zk`, or for a
    /// session's creation and pings `Write`, `KeptAlive`, `LeaseNotFound`); on any other answer
    /// or none, the connection is given up and the client connects to the next server.
    async fn call(&self, request: ClientRequest, timeout: Duration) -> Result<ClientReply, ZkCallError> {
        let index = *self.connected.lock().expect("zk client lock poisoned");
        let (_, addr) = self.client.servers[index];
        let reply = self.client.endpoint().call(addr, request, timeout).await;
        let reason = match reply {
            Ok(
                reply @ (ClientReply::Zk(_)
                | ClientReply::Write(_)
                | ClientReply::KeptAlive { .. }
                | ClientReply::LeaseNotFound),
            ) => {
                self.link.heard(self.client.clock().now());
                return Ok(reply);
            }
            Ok(ClientReply::Unavailable { reason }) => reason,
            Ok(other) => format!("unexpected reply {other:?}"),
            Err(error) => error.to_string(),
        };
        let reason = format!("s{}: {reason}", self.client.servers[index].0);
        let mut connected = self.connected.lock().expect("zk client lock poisoned");
        if *connected == index {
            *connected = (index + 1) % self.client.servers.len();
            self.link.drop_connection(format!("s{}", self.client.servers[index].0), reason.clone());
        }
        Err(ZkCallError::ConnectionLoss(reason))
    }

    fn saw(&self, zxid: Revision) {
        let mut seen = self.seen.lock().expect("zk client lock poisoned");
        *seen = (*seen).max(zxid);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    #[error(transparent)]
    Call(ZkCallError),
    /// The history the watch needs is compacted away: read again and set a new watch.
    #[error(transparent)]
    Store(StoreError),
}

fn reply_zxid(reply: &ZkReply) -> Option<Revision> {
    match reply {
        ZkReply::Exists { zxid, .. }
        | ZkReply::Data { zxid, .. }
        | ZkReply::Children { zxid, .. }
        | ZkReply::Synced { zxid }
        | ZkReply::Write { zxid, .. } => Some(*zxid),
        ZkReply::Watch { .. } => None,
    }
}

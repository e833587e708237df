//! The Lease service: grant, revoke, keepalive (a keeper and a response stream, as etcd-client),
//! time-to-live and the lease list. TTLs are in whole seconds, as etcd's API has them.

use coordsim_checker::history::{Call, Return};
use coordsim_sim::rpc::ClientReply;
use coordsim_sim::store::{Command, CommandResponse, RevokeReason};
use futures::StreamExt as _;
use futures::channel::mpsc;

use super::Conn;
use super::error::{Code, Error, Result, from_unavailable, status};
use super::kv::ResponseHeader;

/// Options of `lease_grant`: the lease ID to use (0: the server picks one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseGrantOptions {
    id: i64,
}

impl LeaseGrantOptions {
    /// No options: the servers choose the lease id.
    pub const fn new() -> Self {
        LeaseGrantOptions { id: 0 }
    }

    /// Asks for lease id `id` (0: the servers choose); a taken id fails.
    pub const fn with_id(mut self, id: i64) -> Self {
        self.id = id;
        self
    }
}

/// What `lease_grant` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseGrantResponse {
    header: ResponseHeader,
    id: i64,
    ttl: i64,
}

impl LeaseGrantResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The TTL the server granted, in seconds.
    pub fn ttl(&self) -> i64 {
        self.ttl
    }

    /// The granted lease's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Always empty: a refused grant is an `Err`.
    pub fn error(&self) -> &str {
        ""
    }
}

/// What `lease_revoke` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRevokeResponse {
    header: ResponseHeader,
}

impl LeaseRevokeResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// One keepalive's answer. `ttl() == 0` means the lease is gone (etcd answers a keepalive for an
/// unknown or expired lease with TTL 0, not an error: server/etcdserver/api/v3rpc/lease.go).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseKeepAliveResponse {
    header: ResponseHeader,
    id: i64,
    ttl: i64,
}

impl LeaseKeepAliveResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The lease's TTL after the renewal, in seconds; 0 when the lease no longer exists.
    pub fn ttl(&self) -> i64 {
        self.ttl
    }

    /// The lease the keepalive was for.
    pub fn id(&self) -> i64 {
        self.id
    }
}

/// Options of `lease_time_to_live`: whether to list the lease's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseTimeToLiveOptions {
    keys: bool,
}

impl LeaseTimeToLiveOptions {
    /// No options: no attached keys in the answer.
    pub const fn new() -> Self {
        LeaseTimeToLiveOptions { keys: false }
    }

    /// Answer the keys attached to the lease too.
    pub const fn with_keys(mut self) -> Self {
        self.keys = true;
        self
    }
}

/// A lease's remaining time, by the leader's lessor. For an unknown lease `ttl()` is -1 (etcd's
/// answer, not an error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseTimeToLiveResponse {
    header: ResponseHeader,
    id: i64,
    ttl: i64,
    granted_ttl: i64,
    keys: Vec<Vec<u8>>,
}

impl LeaseTimeToLiveResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Seconds left, truncated (as etcd's `int64(remaining.Seconds())`); -1 for an unknown lease.
    pub fn ttl(&self) -> i64 {
        self.ttl
    }

    /// The lease asked about.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The TTL the lease was granted with, in seconds.
    pub fn granted_ttl(&self) -> i64 {
        self.granted_ttl
    }

    /// The keys attached to the lease, with `with_keys`.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }
}

/// One lease in `leases`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseStatus {
    id: i64,
}

impl LeaseStatus {
    /// The lease's id.
    pub fn id(&self) -> i64 {
        self.id
    }
}

/// What `leases` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseLeasesResponse {
    header: ResponseHeader,
    leases: Vec<LeaseStatus>,
}

impl LeaseLeasesResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Every lease the cluster holds, by id.
    pub fn leases(&self) -> &[LeaseStatus] {
        &self.leases
    }
}

/// Sends keepalives for one lease; their answers arrive on the [`LeaseKeepAliveStream`].
pub struct LeaseKeeper {
    id: i64,
    conn: Conn,
    answers: mpsc::UnboundedSender<LeaseKeepAliveResponse>,
}

impl LeaseKeeper {
    /// The lease's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Sends one keepalive and returns at once, as etcd-client's does; the answer comes on the
    /// stream (none if the request or its reply is lost: the caller times that out itself).
    /// Errors: `LeaseKeepAliveError` once the stream is dropped.
    pub async fn keep_alive(&mut self) -> Result<()> {
        if self.answers.is_closed() {
            return Err(Error::LeaseKeepAliveError("the keepalive stream is closed".into()));
        }
        let (conn, answers, id) = (self.conn.clone(), self.answers.clone(), self.id);
        madsim::task::spawn(async move {
            if let Some(answer) = renew(&conn, id).await {
                let _ = answers.unbounded_send(answer);
            }
        });
        Ok(())
    }
}

/// The answers to a [`LeaseKeeper`]'s keepalives, in the order they arrive.
pub struct LeaseKeepAliveStream {
    answers: mpsc::UnboundedReceiver<LeaseKeepAliveResponse>,
}

impl LeaseKeepAliveStream {
    /// The next answer; waits until one arrives.
    pub async fn message(&mut self) -> Result<Option<LeaseKeepAliveResponse>> {
        Ok(self.answers.next().await)
    }
}

/// One recorded keepalive: the answer, or `None` when none came in the budget.
async fn renew(conn: &Conn, id: i64) -> Option<LeaseKeepAliveResponse> {
    let op = conn.invoke(Call::LeaseKeepAlive { lease: id });
    match conn.client().keep_alive(id, conn.budget()).await {
        Ok(ClientReply::KeptAlive { ttl_ms }) => {
            conn.ok(op, Return::LeaseKeptAlive { ttl_ms });
            Some(LeaseKeepAliveResponse { header: ResponseHeader::default(), id, ttl: (ttl_ms / 1000) as i64 })
        }
        Ok(ClientReply::LeaseNotFound) => {
            conn.fail(op, "lease not found");
            Some(LeaseKeepAliveResponse { header: ResponseHeader::default(), id, ttl: 0 })
        }
        Ok(other) => {
            conn.info(op, &format!("{other:?}"));
            None
        }
        Err(error) => {
            conn.info(op, &error.to_string());
            None
        }
    }
}

/// etcd-client's Lease client.
#[derive(Clone)]
pub struct LeaseClient {
    pub(crate) conn: Conn,
}

impl LeaseClient {
    /// Grants a lease of `ttl` seconds (the server raises a TTL below its minimum, 1 s, to it).
    /// A grant whose reply is lost may still have created the lease, which then expires unkept.
    pub async fn grant(&mut self, ttl: i64, options: Option<LeaseGrantOptions>) -> Result<LeaseGrantResponse> {
        if ttl <= 0 {
            return Err(status(Code::InvalidArgument, "etcdserver: lease TTL is invalid"));
        }
        let ttl_ms = (ttl as u64).saturating_mul(1000);
        let id = options.unwrap_or_default().id;
        let op = self.conn.invoke(Call::LeaseGrant { ttl_ms });
        match self.conn.write(Command::LeaseGrant { id, ttl_ms }).await {
            Ok(CommandResponse::LeaseGrant { header, id, ttl_ms }) => {
                self.conn.ok(op, Return::LeaseGranted { lease: id, ttl_ms });
                Ok(LeaseGrantResponse { header: ResponseHeader::new(header.revision), id, ttl: (ttl_ms / 1000) as i64 })
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }

    /// Revokes the lease and deletes its keys. Unknown lease: `NotFound`, "requested lease not found".
    pub async fn revoke(&mut self, id: i64) -> Result<LeaseRevokeResponse> {
        let op = self.conn.invoke(Call::LeaseRevoke { lease: id });
        match self.conn.write(Command::LeaseRevoke { id, reason: RevokeReason::Client }).await {
            Ok(CommandResponse::LeaseRevoke { header }) => {
                self.conn.ok(op, Return::LeaseRevoked);
                Ok(LeaseRevokeResponse { header: ResponseHeader::new(header.revision) })
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }

    /// Opens a keepalive stream and sends its first keepalive, as etcd-client does: an unknown
    /// lease fails with `LeaseKeepAliveError("lease not found")`; no answer in the budget fails
    /// with `DeadlineExceeded`.
    pub async fn keep_alive(&mut self, id: i64) -> Result<(LeaseKeeper, LeaseKeepAliveStream)> {
        match renew(&self.conn, id).await {
            Some(answer) if answer.ttl > 0 => {}
            Some(_) => return Err(Error::LeaseKeepAliveError("lease not found".into())),
            None => {
                return Err(from_unavailable(&coordsim_sim::client::Unavailable {
                    budget_ms: self.conn.budget().as_millis() as u64,
                    attempts: 1,
                    last: "no answer to the first keepalive".into(),
                }));
            }
        }
        let (answers, receiver) = mpsc::unbounded();
        Ok((LeaseKeeper { id, conn: self.conn.clone(), answers }, LeaseKeepAliveStream { answers: receiver }))
    }

    /// The lease's remaining and granted TTL by the leader's lessor (`ttl() == -1`: unknown lease).
    pub async fn time_to_live(
        &mut self,
        id: i64,
        options: Option<LeaseTimeToLiveOptions>,
    ) -> Result<LeaseTimeToLiveResponse> {
        let keys = options.unwrap_or_default().keys;
        let call = self.conn.api_call("lease_time_to_live", format!("lease {id}"), Vec::new());
        let op = self.conn.invoke(call);
        match self.conn.client().time_to_live(id, keys, self.conn.budget()).await {
            Ok(ClientReply::LeaseTtl { granted_ttl_ms, remaining_ms, keys, .. }) => {
                self.conn.ok(op, Conn::api_return(&format!("{remaining_ms} ms left"), 0));
                Ok(LeaseTimeToLiveResponse {
                    header: ResponseHeader::default(),
                    id,
                    ttl: (remaining_ms / 1000) as i64,
                    granted_ttl: (granted_ttl_ms / 1000) as i64,
                    keys: keys.into_iter().map(String::into_bytes).collect(),
                })
            }
            Ok(ClientReply::LeaseNotFound) => {
                self.conn.ok(op, Conn::api_return("not found", 0));
                Ok(LeaseTimeToLiveResponse {
                    header: ResponseHeader::default(),
                    id,
                    ttl: -1,
                    granted_ttl: 0,
                    keys: Vec::new(),
                })
            }
            Ok(other) => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply {other:?}")))
            }
            Err(error) => {
                self.conn.fail(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }

    /// Every lease's ID.
    pub async fn leases(&mut self) -> Result<LeaseLeasesResponse> {
        let op = self.conn.invoke(self.conn.api_call("leases", String::new(), Vec::new()));
        match self.conn.client().leases(self.conn.budget()).await {
            Ok(ids) => {
                self.conn.ok(op, Conn::api_return(&format!("{} leases", ids.len()), 0));
                Ok(LeaseLeasesResponse {
                    header: ResponseHeader::default(),
                    leases: ids.into_iter().map(|id| LeaseStatus { id }).collect(),
                })
            }
            Err(error) => {
                self.conn.fail(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }
}

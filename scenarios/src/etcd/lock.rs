//! etcd's Lock service (server/etcdserver/api/v3lock): the server runs the mutex recipe for the
//! caller and answers once the caller holds the lock; the holder key's create revision is the
//! fencing token.

use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use coordsim_sim::rpc::{ClientReply, ClientRequest};
use coordsim_sim::store::CommandResponse;

use super::error::{Code, Error, LEASE_NOT_FOUND, Result, from_unavailable, status};
use super::kv::ResponseHeader;
use super::{Conn, text};

/// How long one attempt of a blocking call waits for the server before asking again: a request
/// or reply lost to a crash or a partition would otherwise leave it waiting for ever (madsim drops
/// such messages silently, where gRPC would see the connection break). Asking again is safe: for
/// one lease, the server's recipe finds the key it made before.
pub(crate) const BLOCKING_ATTEMPT: Duration = Duration::from_secs(30);

/// Sends `request`, which blocks on the server, again after each unanswered attempt until a
/// reply that `done` accepts comes or the connection's patience runs out (then `op` is recorded
/// as unknown: the server may still act on the request).
pub(crate) async fn blocking(
    conn: &Conn,
    op: coordsim_checker::history::OpId,
    request: ClientRequest,
    done: impl Fn(&ClientReply) -> bool,
) -> Result<ClientReply> {
    let mut pending = Pending { conn, op, open: true };
    let deadline = conn.env().clock.now().plus(conn.patience());
    loop {
        let left = conn.env().clock.now().until(deadline);
        if left.is_zero() {
            pending.open = false;
            let error = coordsim_sim::client::Unavailable {
                budget_ms: conn.patience().as_millis() as u64,
                attempts: 1,
                last: "no answer in time".into(),
            };
            conn.info(op, &error.to_string());
            return Err(from_unavailable(&error));
        }
        // A timed-out attempt or a lost leadership: ask again.
        if let Ok(reply) = conn.client().call_with(request.clone(), BLOCKING_ATTEMPT.min(left), left).await
            && done(&reply)
        {
            pending.open = false;
            return Ok(reply);
        }
    }
}

/// A blocking request the caller may give up on: dropping its future (a `select`, a timeout, a
/// task aborted when the caller learns its lease is gone) cancels the gRPC call in etcd-client,
/// and the history records the request as ended then, outcome unknown (`info`: the server may
/// have granted it just before). Otherwise it would stay open for the rest of the run, a waiter
/// that no longer waits.
struct Pending<'a> {
    conn: &'a Conn,
    op: coordsim_checker::history::OpId,
    open: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        // A future dropped as the simulation is torn down, after the history was taken, records
        // nothing.
        if self.open && madsim::runtime::Handle::try_current().is_ok() {
            self.conn.info(self.op, "given up by the caller before an answer: the server may still act on it");
        }
    }
}

/// Options of `lock`: the lease the lock is held under (required here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockOptions {
    lease: i64,
}

impl LockOptions {
    /// No lease: `lock` needs one (`with_lease`) in the simulator, else `InvalidArgs`.
    pub const fn new() -> Self {
        LockOptions { lease: 0 }
    }

    /// Hold the lock under `lease`: when it expires, the lock is released.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }
}

/// What `lock` answers once the lock is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockResponse {
    header: ResponseHeader,
    key: Vec<u8>,
}

impl LockResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The holder's key (`<name>/<lease hex>`): pass it to `unlock`; its create revision is the
    /// fencing token (read it with `get`, or use `header().revision()`).
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}

/// What `unlock` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnlockResponse {
    header: ResponseHeader,
}

impl UnlockResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// etcd-client's Lock client.
#[derive(Clone)]
pub struct LockClient {
    pub(crate) conn: Conn,
}

impl LockClient {
    /// Waits until the caller holds the lock `name` under the options' lease. The response's
    /// header revision is the holder key's create revision: the fencing token. Errors: the lease
    /// is gone (`NotFound`, "requested lease not found"); no lease given (`InvalidArgs`: etcd
    /// would make a session of its own, which the simulator does not); the connect timeout passed
    /// (`DeadlineExceeded`, outcome unknown: the server may still grant the lock).
    pub async fn lock(&mut self, name: impl Into<Vec<u8>>, options: Option<LockOptions>) -> Result<LockResponse> {
        let name = text(name.into(), "lock name")?;
        let lease = options.unwrap_or_default().lease;
        if lease == 0 {
            return Err(Error::InvalidArgs("lock needs a lease (LockOptions::new().with_lease(id))".into()));
        }
        let op = self.conn.invoke(Call::Lock { name: name.clone(), lease, permits: 1 });
        let request = ClientRequest::Lock { name, lease };
        match blocking(&self.conn, op, request, |reply| {
            matches!(reply, ClientReply::Locked { .. } | ClientReply::LockFailed { .. })
        })
        .await?
        {
            ClientReply::Locked { key, revision } => {
                self.conn.ok(op, Return::Locked { key: key.clone(), token: revision });
                Ok(LockResponse { header: ResponseHeader::new(revision), key: key.into_bytes() })
            }
            other => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(status(Code::NotFound, LEASE_NOT_FOUND))
            }
        }
    }

    /// Releases the lock held under `key` (deletes the key).
    pub async fn unlock(&mut self, key: impl Into<Vec<u8>>) -> Result<UnlockResponse> {
        let key = text(key.into(), "key")?;
        let name = key.rsplit_once('/').map_or(key.as_str(), |(name, _)| name).to_string();
        let op = self.conn.invoke(Call::Unlock { name, key: key.clone() });
        match self.conn.client().call(ClientRequest::Unlock { key }, self.conn.budget()).await {
            Ok(ClientReply::Write(CommandResponse::DeleteRange(response))) => {
                self.conn.ok(op, Return::Unlocked);
                Ok(UnlockResponse { header: ResponseHeader::new(response.header.revision) })
            }
            Ok(other) => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply to unlock: {other:?}")))
            }
            Err(error) => {
                self.conn.info(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }
}

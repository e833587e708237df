//! etcd's Election service (server/etcdserver/api/v3election, on client/v3/concurrency's Election):
//! candidates queue under the election's name, the oldest key leads; the leader key's create
//! revision is the term, and the fencing token. A campaign is recorded as a `lock` of the name
//! (leadership is a lock whose token is the term) and a resign as an `unlock`, so the lock
//! properties judge leaders as they judge holders.
//!
//! Errors of the Election service are plain Go errors in etcd (concurrency.ErrElectionNotLeader,
//! ErrElectionNoLeader), which gRPC carries with code Unknown and their text.

use std::time::Duration;

use coordsim_checker::history::{Call, Return, Touched};
use coordsim_sim::rpc::{self, ClientReply, ClientRequest, ElectionReply, ElectionRequest};
use futures::StreamExt as _;
use futures::channel::mpsc;

use super::error::{Code, Error, LEASE_NOT_FOUND, NO_LEADER, NOT_LEADER, Result, from_unavailable, status};
use super::kv::{KeyValue, ResponseHeader};
use super::lock::blocking;
use super::{Conn, text};

/// What identifies one leadership: the election's name, the leader's key, its create revision
/// (the term) and its lease.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderKey {
    name: Vec<u8>,
    key: Vec<u8>,
    rev: i64,
    lease: i64,
}

impl LeaderKey {
    /// An empty leader key, to fill with the `with_*` builders (a key from `campaign` is whole).
    pub const fn new() -> Self {
        LeaderKey { name: Vec::new(), key: Vec::new(), rev: 0, lease: 0 }
    }

    /// The election's name (the key prefix candidates campaign under).
    pub fn with_name(mut self, name: impl Into<Vec<u8>>) -> Self {
        self.name = name.into();
        self
    }

    /// The candidate's key in the election (`<name>/<lease id in hex>`).
    pub fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = key.into();
        self
    }

    /// The key's create revision: the leader's term, and its fencing token.
    pub const fn with_rev(mut self, rev: i64) -> Self {
        self.rev = rev;
        self
    }

    /// The lease the candidate's key is attached to.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }

    /// The election's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The election's name as text. Errors: `InvalidArgs` if it is not UTF-8.
    pub fn name_str(&self) -> Result<&str> {
        std::str::from_utf8(&self.name).map_err(|_| Error::InvalidArgs("election name is not UTF-8".into()))
    }

    /// The leader's key in the election.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The leader's key as text. Errors: `InvalidArgs` if it is not UTF-8.
    pub fn key_str(&self) -> Result<&str> {
        std::str::from_utf8(&self.key).map_err(|_| Error::InvalidArgs("leader key is not UTF-8".into()))
    }

    /// The leader key's create revision: the term, usable as a fencing token.
    pub const fn rev(&self) -> i64 {
        self.rev
    }

    /// The lease the leader's key is attached to: the leadership lasts as long as it does.
    pub const fn lease(&self) -> i64 {
        self.lease
    }

    fn to_rpc(&self) -> Result<rpc::LeaderKey> {
        Ok(rpc::LeaderKey {
            name: text(self.name.clone(), "leader name")?,
            key: text(self.key.clone(), "leader key")?,
            rev: self.rev,
            lease: self.lease,
        })
    }

    fn from_rpc(leader: rpc::LeaderKey) -> LeaderKey {
        LeaderKey { name: leader.name.into_bytes(), key: leader.key.into_bytes(), rev: leader.rev, lease: leader.lease }
    }
}

/// What `campaign` answers once the candidate leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CampaignResponse {
    header: ResponseHeader,
    leader: LeaderKey,
}

impl CampaignResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The key this candidate leads with (always `Some`).
    pub fn leader(&self) -> Option<&LeaderKey> {
        Some(&self.leader)
    }

    /// Takes the leader key out of the response (always `Some`), for `proclaim` and `resign`.
    pub fn take_leader(&mut self) -> Option<LeaderKey> {
        Some(std::mem::take(&mut self.leader))
    }
}

/// Options of `proclaim`: the leadership to proclaim under (required).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProclaimOptions {
    leader: Option<LeaderKey>,
}

impl ProclaimOptions {
    /// No leader key: `proclaim` fails until one is given.
    pub const fn new() -> Self {
        ProclaimOptions { leader: None }
    }

    /// The leader key (from `campaign`) whose value to change.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// What `proclaim` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProclaimResponse {
    header: ResponseHeader,
}

impl ProclaimResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// The current leader's key-value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderResponse {
    header: ResponseHeader,
    kv: Option<KeyValue>,
}

impl LeaderResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The leader's key and value, `None` when the election has no leader.
    pub fn kv(&self) -> Option<&KeyValue> {
        self.kv.as_ref()
    }
}

/// Options of `resign`: the leadership to give up (required).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResignOptions {
    leader: Option<LeaderKey>,
}

impl ResignOptions {
    /// No leader key: `resign` fails until one is given.
    pub const fn new() -> Self {
        ResignOptions { leader: None }
    }

    /// The leader key (from `campaign`) to give up.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// What `resign` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResignResponse {
    header: ResponseHeader,
}

impl ResignResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// Every change of leader of one election, in order, as etcd's Observe streams them.
pub struct ObserveStream {
    leaders: mpsc::UnboundedReceiver<LeaderResponse>,
}

impl ObserveStream {
    /// The next leader; waits until the leader changes.
    pub async fn message(&mut self) -> Result<Option<LeaderResponse>> {
        Ok(self.leaders.next().await)
    }
}

/// etcd-client's Election client.
#[derive(Clone)]
pub struct ElectionClient {
    pub(crate) conn: Conn,
}

impl ElectionClient {
    /// Queues for leadership of `name` with `value` under `lease`; answers once the caller leads.
    /// Errors: the lease is gone (`NotFound`); the connect timeout passed first (`DeadlineExceeded`;
    /// the candidacy may remain queued on the server until the lease ends).
    pub async fn campaign(
        &mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: i64,
    ) -> Result<CampaignResponse> {
        let name = text(name.into(), "election name")?;
        let value = text(value.into(), "value")?;
        let op = self.conn.invoke(Call::Lock { name: name.clone(), lease, permits: 1 });
        let request = ClientRequest::Election(ElectionRequest::Campaign { name, lease, value });
        let done = |reply: &ClientReply| {
            matches!(reply, ClientReply::Election(ElectionReply::Elected(_) | ElectionReply::Failed { .. }))
        };
        match blocking(&self.conn, op, request, done).await? {
            ClientReply::Election(ElectionReply::Elected(leader)) => {
                self.conn.ok(op, Return::Locked { key: leader.key.clone(), token: leader.rev });
                Ok(CampaignResponse { header: ResponseHeader::new(leader.rev), leader: LeaderKey::from_rpc(leader) })
            }
            other => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(status(Code::NotFound, LEASE_NOT_FOUND))
            }
        }
    }

    /// Replaces the leader's value, only while `options`' leadership lasts: otherwise
    /// "election: not leader".
    pub async fn proclaim(
        &mut self,
        value: impl Into<Vec<u8>>,
        options: Option<ProclaimOptions>,
    ) -> Result<ProclaimResponse> {
        let value = text(value.into(), "value")?;
        let leader = leader_of(options.and_then(|o| o.leader))?;
        let writes = vec![Touched::Key(leader.key.clone())];
        let call = self.conn.api_call("proclaim", format!("{}={value} (term {})", leader.key, leader.rev), writes);
        let op = self.conn.invoke(call);
        let request = ClientRequest::Election(ElectionRequest::Proclaim { leader, value });
        match self.conn.client().call(request, self.conn.budget()).await {
            Ok(ClientReply::Election(ElectionReply::Proclaimed)) => {
                self.conn.ok(op, Conn::api_return("proclaimed", 0));
                Ok(ProclaimResponse { header: ResponseHeader::default() })
            }
            Ok(ClientReply::Election(ElectionReply::NotLeader)) => {
                self.conn.fail(op, NOT_LEADER);
                Err(status(Code::Unknown, NOT_LEADER))
            }
            Ok(other) => {
                self.conn.info(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply to proclaim: {other:?}")))
            }
            Err(error) => {
                self.conn.info(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }

    /// The current leader's key-value (a linearizable read); nobody leads: "election: no leader".
    pub async fn leader(&mut self, name: impl Into<Vec<u8>>) -> Result<LeaderResponse> {
        let name = text(name.into(), "election name")?;
        let op = self.conn.invoke(self.conn.api_call("leader", name.clone(), Vec::new()));
        let request = ClientRequest::Election(ElectionRequest::Leader { name });
        match self.conn.client().call(request, self.conn.budget()).await {
            Ok(ClientReply::Election(ElectionReply::Leader(Some(kv)))) => {
                self.conn.ok(op, Conn::api_return(&format!("{}={}", kv.key, kv.value), kv.mod_revision));
                Ok(LeaderResponse { header: ResponseHeader::default(), kv: Some(KeyValue(kv)) })
            }
            Ok(ClientReply::Election(ElectionReply::Leader(None))) => {
                self.conn.ok(op, Conn::api_return("no leader", 0));
                Err(status(Code::Unknown, NO_LEADER))
            }
            Ok(other) => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply to leader: {other:?}")))
            }
            Err(error) => {
                self.conn.fail(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }

    /// A stream of the election's leaders: the current one first (if any), then each new one.
    pub async fn observe(&mut self, name: impl Into<Vec<u8>>) -> Result<ObserveStream> {
        let name = text(name.into(), "election name")?;
        let (sender, leaders) = mpsc::unbounded();
        let conn = self.conn.clone();
        madsim::task::spawn(async move {
            let mut seen = None;
            let wait = Duration::from_secs(5);
            loop {
                match coordsim_sim::client::election::observe(conn.client(), &name, seen, wait).await {
                    Ok(Some(kv)) if seen != Some((kv.create_revision, kv.mod_revision)) => {
                        seen = Some((kv.create_revision, kv.mod_revision));
                        let response = LeaderResponse { header: ResponseHeader::default(), kv: Some(KeyValue(kv)) };
                        if sender.unbounded_send(response).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => conn.env().clock.sleep(Duration::from_millis(100)).await,
                }
                if sender.is_closed() {
                    return;
                }
            }
        });
        Ok(ObserveStream { leaders })
    }

    /// Gives up the leadership named in `option` (deletes its key if it is still the leader's).
    pub async fn resign(&mut self, option: Option<ResignOptions>) -> Result<ResignResponse> {
        let leader = leader_of(option.and_then(|o| o.leader))?;
        let op = self.conn.invoke(Call::Unlock { name: leader.name.clone(), key: leader.key.clone() });
        let request = ClientRequest::Election(ElectionRequest::Resign { leader });
        match self.conn.client().call(request, self.conn.budget()).await {
            Ok(ClientReply::Election(ElectionReply::Resigned)) => {
                self.conn.ok(op, Return::Unlocked);
                Ok(ResignResponse { header: ResponseHeader::default() })
            }
            Ok(ClientReply::Election(ElectionReply::NotLeader)) => {
                self.conn.fail(op, NOT_LEADER);
                Err(status(Code::Unknown, NOT_LEADER))
            }
            Ok(other) => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply to resign: {other:?}")))
            }
            Err(error) => {
                self.conn.info(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }
}

fn leader_of(leader: Option<LeaderKey>) -> Result<rpc::LeaderKey> {
    leader.ok_or_else(|| Error::InvalidArgs("\"leader\" field must be provided (with_leader)".into()))?.to_rpc()
}

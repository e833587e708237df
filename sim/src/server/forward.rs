//! What an etcd member that does not lead does with a client's request: it serves it all the
//! same, through the leader, as etcd does. A client given a follower's address is served there
//! (the simulator's own client stays on one member until it fails, see `crate::client`;
//! etcd-client balances its requests over every endpoint).
//!
//! - A proposal (put, delete, txn, lease grant) is forwarded to the leader (etcd raft's
//!   `stepFollower` sends a follower's `MsgProp` on to the leader), and the member answers once
//!   it has applied the entry itself (etcdserver waits for its own apply of the request's id).
//!   With no leader known it is refused at once ("no leader at term; dropping proposal").
//! - A linearizable read asks the leader for its read index (`MsgReadIndex`: the leader confirms
//!   its leadership with a quorum, then answers with its commit index) and is served from this
//!   member's state once it has applied that index (etcdserver `linearizableReadLoop`).
//! - A lease's keepalive and time-to-live go to the leader's lessor (etcd 3.4
//!   `EtcdServer::LeaseRenew` and `LeaseTimeToLive` forward them over the peer URL's
//!   `/leases` handlers): see `Server::keep_alive`.
//!
//! A forwarded proposal is one more one-way trip each way than a proposal made on the leader,
//! and the member's apply waits for the commit index the leader sends after it commits: a
//! client on a follower sees 6 one-way trips for a write where one on the leader sees 4.

use std::time::Duration;

use madsim::net::rpc::Request;
use openraft_rt::WatchReceiver;
use serde::{Deserialize, Serialize};

use super::{Server, lock};
use crate::rpc::{ClientReply, ClientRequest};
use crate::store::{Command, CommandResponse};

/// How long a member waits for the leader's answer to a forwarded proposal or read index.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a member waits to apply an entry the leader has committed before it gives up on
/// answering (the client sees the write's outcome as unknown).
const APPLY_WAIT: Duration = Duration::from_secs(1);

/// A follower's proposal, forwarded to the leader.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProposeRpc(pub Command);
impl Request for ProposeRpc {
    type Response = Forwarded<CommandResponse>;
    const ID: u64 = 0x6677_6400_0001;
}

/// A follower's request for the leader's read index.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReadIndexRpc;
impl Request for ReadIndexRpc {
    type Response = Forwarded<()>;
    const ID: u64 = 0x6677_6400_0002;
}

/// The leader's answer to a forwarded request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Forwarded<T> {
    /// Done: the log index the asking member must apply before it answers its client.
    Done {
        index: u64,
        value: T,
    },
    /// The asked member does not lead; `leader` is its guess.
    NotLeader {
        leader: Option<u64>,
    },
    Unavailable {
        reason: String,
    },
}

impl Server {
    /// Registers the leader's side of forwarding.
    pub(super) fn serve_forwarded(self: &std::sync::Arc<Self>) {
        let server = self.clone();
        self.endpoint.add_rpc_handler(move |ProposeRpc(command)| {
            let server = server.clone();
            async move {
                match server.raft.client_write(command).await {
                    Ok(written) => Forwarded::Done { index: written.log_id.index, value: written.data.into_command() },
                    Err(error) => match error.forward_to_leader() {
                        Some(forward) => Forwarded::NotLeader { leader: forward.leader_id },
                        None => Forwarded::Unavailable { reason: error.to_string() },
                    },
                }
            }
        });
        let server = self.clone();
        self.endpoint.add_rpc_handler(move |ReadIndexRpc| {
            let server = server.clone();
            async move {
                match server.raft.get_read_log_id(openraft::ReadPolicy::ReadIndex).await {
                    Ok((read, _)) => Forwarded::Done { index: read.index(), value: () },
                    Err(error) => match error.forward_to_leader() {
                        Some(forward) => Forwarded::NotLeader { leader: forward.leader_id },
                        None => Forwarded::Unavailable { reason: error.to_string() },
                    },
                }
            }
        });
    }

    /// A proposal made on this member: committed through the leader it knows, answered once
    /// applied here. `NotLeader { leader: None }` when it knows no leader (nothing was sent:
    /// the client may try elsewhere); `Unavailable` when the outcome is unknown.
    pub(super) async fn propose_via_leader(&self, leader: u64, command: Command) -> ClientReply {
        let (index, response) = match self.ask_leader(leader, ProposeRpc(command)).await {
            Ok(done) => done,
            Err(reply) => return reply,
        };
        if !self.wait_applied_index(index).await {
            return ClientReply::Unavailable { reason: format!("log index {index} not applied here in time") };
        }
        ClientReply::Write(response)
    }

    /// The leader's read index, applied here.
    pub(super) async fn read_index_via_leader(&self, leader: u64) -> Result<(), ClientReply> {
        let (index, ()) = self.ask_leader(leader, ReadIndexRpc).await?;
        if !self.wait_applied_index(index).await {
            return Err(ClientReply::Unavailable { reason: format!("read index {index} not applied here in time") });
        }
        Ok(())
    }

    async fn ask_leader<R, T>(&self, leader: u64, request: R) -> Result<(u64, T), ClientReply>
    where
        R: Request<Response = Forwarded<T>>,
    {
        match self.call_leader(leader, request).await? {
            Forwarded::Done { index, value } => Ok((index, value)),
            // The member named may have just stepped down: the client asks again elsewhere.
            Forwarded::NotLeader { leader } => Err(ClientReply::NotLeader { leader }),
            Forwarded::Unavailable { reason } => Err(ClientReply::Unavailable { reason }),
        }
    }

    /// Passes a client's request on to the leader and its answer back (etcd 3.4 forwards a
    /// lease's renewal and time-to-live to the leader's `/leases` peer handlers).
    pub(super) async fn relay(&self, leader: u64, request: ClientRequest) -> ClientReply {
        self.call_leader(leader, request).await.unwrap_or_else(|unanswered| unanswered)
    }

    /// One call to `leader`; `Unavailable` if it is not a member or does not answer within
    /// [`FORWARD_TIMEOUT`].
    async fn call_leader<R: Request>(&self, leader: u64, request: R) -> Result<R::Response, ClientReply> {
        let Some(addr) = self.members.get(&leader).copied() else {
            return Err(ClientReply::Unavailable { reason: format!("leader s{leader} is not a member") });
        };
        self.endpoint
            .call(addr, request, FORWARD_TIMEOUT)
            .await
            .map_err(|error| ClientReply::Unavailable { reason: format!("forwarding to s{leader}: {error}") })
    }

    /// Waits (up to [`APPLY_WAIT`] of local time) until this member has applied log `index`
    /// (an entry of any kind: Raft's metrics change after every apply, blank entries included).
    async fn wait_applied_index(&self, index: u64) -> bool {
        let applied =
            |server: &Self| lock(&server.applied).last_applied.as_ref().is_some_and(|log_id| log_id.index >= index);
        let deadline = self.clock.now().plus_ms(APPLY_WAIT.as_millis() as u64);
        let mut metrics = self.raft.metrics();
        loop {
            if applied(self) {
                return true;
            }
            let remaining_ms = self.clock.now().ms_until(deadline);
            if remaining_ms == 0 {
                return false;
            }
            match madsim::time::timeout(Duration::from_millis(remaining_ms), metrics.changed()).await {
                Ok(Ok(())) => {}
                // Timed out, or Raft stopped.
                _ => return applied(self),
            }
        }
    }
}

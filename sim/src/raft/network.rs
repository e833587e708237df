//! Raft transport over madsim RPC (in-process, no serialization in simulation).
//!
//! A clogged link or a lost message makes a madsim RPC wait forever, so every call carries a
//! deadline: openraft's own (`RPCOption::hard_ttl`), but never less than the election timeout's
//! minimum. openraft gives an AppendEntries call the heartbeat interval (50 ms by default) and,
//! when it times out, backs the replication off; on a link slower than that (the `latency`
//! fault's 40 ms each way) every append timed out, a commit took 500-700 ms, keepalives (which
//! commit a checkpoint) timed out and live clients' 2 s leases expired (the lost-wakeup
//! scenarios, 15 of 20 seeds). etcd's raft transport streams messages and does not give up on a
//! slow one; a reply slower than an election timeout is as good as none (a follower would have
//! stood for election by then). A remote fatal error is reported as `Unreachable`: openraft
//! 0.10's RPC error has no room for a remote `RaftError`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::net::Endpoint;
use futures::Stream;
use madsim::net::rpc::Request;
use openraft::base::{BoxFuture, BoxStream};
use openraft::error::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, stream_append_sequential};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode, RaftNetworkFactory, RaftNetworkV2};
use serde::{Deserialize, Serialize};

use super::stream::Pipeline;
use super::{Snapshot, SnapshotMeta, StoreSnapshot, TypeConfig, Vote};

/// A remote node's failure to handle a Raft RPC (it is shutting down).
pub type RaftRpcError = String;

#[derive(Serialize, Deserialize)]
pub struct AppendRpc(pub AppendEntriesRequest<TypeConfig>);
impl Request for AppendRpc {
    type Response = Result<AppendEntriesResponse<TypeConfig>, RaftRpcError>;
    const ID: u64 = 0x7261_6674_0001;
}

#[derive(Serialize, Deserialize)]
pub struct VoteRpc(pub VoteRequest<TypeConfig>);
impl Request for VoteRpc {
    type Response = Result<VoteResponse<TypeConfig>, RaftRpcError>;
    const ID: u64 = 0x7261_6674_0002;
}

#[derive(Serialize, Deserialize)]
pub struct PreVoteRpc(pub VoteRequest<TypeConfig>);
impl Request for PreVoteRpc {
    type Response = Result<VoteResponse<TypeConfig>, RaftRpcError>;
    const ID: u64 = 0x7261_6674_0003;
}

#[derive(Serialize, Deserialize)]
pub struct SnapshotRpc {
    pub vote: Vote,
    pub meta: SnapshotMeta,
    pub data: StoreSnapshot,
}
impl Request for SnapshotRpc {
    type Response = Result<SnapshotResponse<TypeConfig>, RaftRpcError>;
    const ID: u64 = 0x7261_6674_0004;
}

/// Creates a [`Peer`] per target; all share the server's endpoint.
#[derive(Clone)]
pub struct Network {
    /// This server's Raft id.
    id: u64,
    endpoint: Endpoint,
    /// The shortest deadline of a call: the election timeout's minimum.
    rpc_timeout_min: Duration,
    /// Appends in flight to one follower (`ServerTimes::max_inflight_appends`; 1: openraft's
    /// one at a time).
    max_inflight_appends: usize,
    /// Numbers the append streams this server opens (super::stream).
    sessions: Arc<AtomicU64>,
}

impl Network {
    /// `rpc_timeout_min_ms`: the election timeout's minimum, in ms (see the module docs).
    /// `max_inflight_appends` above 1 pipelines replication (super::stream).
    pub fn new(id: u64, endpoint: Endpoint, rpc_timeout_min_ms: u64, max_inflight_appends: usize) -> Self {
        let rpc_timeout_min = Duration::from_millis(rpc_timeout_min_ms);
        Network { id, endpoint, rpc_timeout_min, max_inflight_appends, sessions: Arc::default() }
    }
}

/// The connection to one other server.
pub struct Peer {
    id: u64,
    endpoint: Endpoint,
    rpc_timeout_min: Duration,
    max_inflight_appends: usize,
    sessions: Arc<AtomicU64>,
    target: u64,
    addr: Option<SocketAddr>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Peer {
        Peer {
            id: self.id,
            endpoint: self.endpoint.clone(),
            rpc_timeout_min: self.rpc_timeout_min,
            max_inflight_appends: self.max_inflight_appends,
            sessions: self.sessions.clone(),
            target,
            addr: node.addr.parse().ok(),
        }
    }
}

impl Peer {
    async fn call<R: Request>(&self, request: R, option: &RPCOption) -> Result<R::Response, Unreachable<TypeConfig>> {
        let Some(addr) = self.addr else {
            return Err(unreachable(format!("node {} has no valid address", self.target)));
        };
        let timeout = option.hard_ttl().max(self.rpc_timeout_min);
        self.endpoint.call(addr, request, timeout).await.map_err(|e| unreachable(format!("node {}: {e}", self.target)))
    }
}

pub(super) fn unreachable(message: String) -> Unreachable<TypeConfig> {
    Unreachable::new(&AnyError::error(message))
}

/// A remote failure, as openraft 0.10 can carry it.
pub(super) fn remote_error(message: RaftRpcError) -> RPCError<TypeConfig> {
    RPCError::Unreachable(unreachable(format!("remote: {message}")))
}

fn remote<T>(reply: Result<T, RaftRpcError>) -> Result<T, RPCError<TypeConfig>> {
    reply.map_err(remote_error)
}

impl RaftNetworkV2<TypeConfig> for Peer {
    type SnapshotData = StoreSnapshot;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        remote(self.call(AppendRpc(rpc), &option).await?)
    }

    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<BoxStream<'s, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>, RPCError<TypeConfig>>,
    >
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Send + Unpin + 'static,
    {
        if self.max_inflight_appends <= 1 {
            return stream_append_sequential(self, input, option);
        }
        let Some(addr) = self.addr else {
            let error = unreachable(format!("node {} has no valid address", self.target));
            return Box::pin(std::future::ready(Err(RPCError::Unreachable(error))));
        };
        let timeout = option.hard_ttl().max(self.rpc_timeout_min);
        let session = self.sessions.fetch_add(1, Ordering::Relaxed);
        let pipeline =
            Pipeline::new(self.endpoint.clone(), addr, (self.id, session), timeout, self.max_inflight_appends, input);
        let stream: BoxStream<'s, _> = Box::pin(pipeline);
        Box::pin(std::future::ready(Ok(stream)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        remote(self.call(VoteRpc(rpc), &option).await?)
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        remote(self.call(PreVoteRpc(rpc), &option).await?)
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let request = SnapshotRpc { vote, meta: snapshot.meta, data: snapshot.snapshot };
        let reply = self.call(request, &option).await?;
        reply.map_err(|message| StreamingError::Unreachable(unreachable(format!("remote: {message}"))))
    }
}

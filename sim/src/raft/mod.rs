//! Replication of the store with openraft 0.10, on madsim.
//!
//! The glue stays thin: a durable log (survives `kill`/`restart` because it lives outside the
//! node's tasks), the state machine adapter that feeds committed entries to [`crate::store::Store`],
//! and the transport over madsim RPC.

mod log_store;
mod network;
mod state_machine;
mod stream;

use serde::{Deserialize, Serialize};

use crate::rt::MadsimRuntime;
use crate::store::{Command, CommandResponse};

pub use log_store::{Durable, LogStore};
pub use network::{AppendRpc, Network, PreVoteRpc, RaftRpcError, SnapshotRpc, VoteRpc};
pub use state_machine::{Applied, StateMachine, StoreSnapshot};
pub use stream::{AppendStreams, OnAppend, StreamAppendRpc, is_higher_vote};

/// What applying one log entry produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApplyResult {
    /// A client command and the store's response to it.
    Command(CommandResponse),
    /// A blank entry (a new leader's first) or a membership change: nothing for clients.
    Internal,
}

impl ApplyResult {
    /// What a client's command applied as: entries proposed for clients are never blank or
    /// membership entries, so anything else is a bug in our server and stops the run.
    pub fn into_command(self) -> CommandResponse {
        match self {
            ApplyResult::Command(response) => response,
            ApplyResult::Internal => crate::rpc::answered_wrongly("a client command", &"an internal entry"),
        }
    }
}

openraft::declare_raft_types!(
    /// openraft types of coordsim's replicated store.
    pub TypeConfig:
        D = Command,
        R = ApplyResult,
        NodeId = u64,
        Node = openraft::BasicNode,
        AsyncRuntime = MadsimRuntime,
);

pub type Raft = openraft::Raft<TypeConfig, StateMachine>;
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, StoreSnapshot>;

//! etcd's Maintenance `status` and Cluster `member_list`, for the simulated members: the
//! members are fixed (no membership changes are simulated), and a status is the answering
//! member's own view, which a partitioned member may hold stale (as a real member does).

use coordsim_checker::history::Return;
use coordsim_sim::rpc::{ClientReply, ClientRequest};

use super::Conn;
use super::error::{Error, Result, from_unavailable};
use super::kv::ResponseHeader;

/// A member's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusResponse {
    header: ResponseHeader,
    member_id: u64,
    leader: u64,
    raft_term: u64,
    raft_index: u64,
    raft_applied_index: u64,
}

impl StatusResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The simulated server's version string.
    pub fn version(&self) -> &str {
        "3.5.0-coordsim"
    }

    /// The member's id (`s2` is 2).
    pub fn member_id(&self) -> u64 {
        self.member_id
    }

    /// The leader's member id as the answering member knows it; 0 when it knows none.
    pub fn leader(&self) -> u64 {
        self.leader
    }

    /// The answering member's Raft term.
    pub fn raft_term(&self) -> u64 {
        self.raft_term
    }

    /// The member's last Raft log index.
    pub fn raft_index(&self) -> u64 {
        self.raft_index
    }

    /// The last index the member applied.
    pub fn raft_applied_index(&self) -> u64 {
        self.raft_applied_index
    }

    /// Always empty: the simulated members raise no alarms.
    pub fn errors(&self) -> &[String] {
        &[]
    }

    /// Always false: the simulated members are voters.
    pub fn is_learner(&self) -> bool {
        false
    }
}

/// One member of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    id: u64,
    name: String,
    peer_urls: Vec<String>,
    client_urls: Vec<String>,
}

impl Member {
    /// The member's id (its server number).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `s1`, `s2`, ...
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The member's peer address.
    pub fn peer_urls(&self) -> &[String] {
        &self.peer_urls
    }

    /// The member's client address (`s1:2379`).
    pub fn client_urls(&self) -> &[String] {
        &self.client_urls
    }

    /// Always false: the simulated members are voters.
    pub fn is_learner(&self) -> bool {
        false
    }
}

/// What `member_list` answers: the fixed members of the simulated cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberListResponse {
    header: ResponseHeader,
    members: Vec<Member>,
}

impl MemberListResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Every member, in id order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }
}

/// etcd-client's Maintenance client (status only).
#[derive(Clone)]
pub struct MaintenanceClient {
    pub(crate) conn: Conn,
}

impl MaintenanceClient {
    /// The status of the member the client reaches. Errors: no member answered in the budget.
    pub async fn status(&mut self) -> Result<StatusResponse> {
        let op = self.conn.invoke(self.conn.api_call("status", String::new(), Vec::new()));
        match self.conn.client().call(ClientRequest::Status, self.conn.budget()).await {
            Ok(ClientReply::Status { member_id, leader, raft_term, raft_index, raft_applied_index, revision }) => {
                self.conn.ok(
                    op,
                    Return::Api { detail: format!("s{member_id}, leader {leader:?}"), revision, ephemeral_owner: None },
                );
                Ok(StatusResponse {
                    header: ResponseHeader::new(revision),
                    member_id,
                    leader: leader.unwrap_or(0),
                    raft_term,
                    raft_index,
                    raft_applied_index,
                })
            }
            Ok(other) => {
                self.conn.fail(op, &format!("{other:?}"));
                Err(Error::Internal(format!("unexpected reply to status: {other:?}")))
            }
            Err(error) => {
                self.conn.fail(op, &error.to_string());
                Err(from_unavailable(&error))
            }
        }
    }
}

/// etcd-client's Cluster client (member_list only: no membership change is simulated).
#[derive(Clone)]
pub struct ClusterClient {
    pub(crate) conn: Conn,
}

impl ClusterClient {
    /// Every member of the simulated cluster (a fixed list: answered without a request).
    pub async fn member_list(&mut self) -> Result<MemberListResponse> {
        let members = self
            .conn
            .env()
            .servers
            .iter()
            .map(|(id, addr)| Member {
                id: *id,
                name: format!("s{id}"),
                peer_urls: vec![format!("http://{}:2380", addr.ip())],
                client_urls: vec![format!("http://{}:2379", addr.ip())],
            })
            .collect();
        Ok(MemberListResponse { header: ResponseHeader::default(), members })
    }
}

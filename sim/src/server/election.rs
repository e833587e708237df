//! etcd's Election service (server/etcdserver/api/v3election): a campaign is the mutex recipe
//! run on the member the request reached with the candidate's proposal as its key's value; the
//! oldest key under the election's prefix leads, and its create_revision is the term (the
//! fencing token).

use std::time::Duration;

use super::{Server, lock};
use crate::recipe::mutex::EtcdMutex;
use crate::rpc::{ClientReply, ElectionReply, ElectionRequest, LeaderKey};
use crate::store::{
    Command, CommandResponse, Compare, CompareResult, CompareTarget, DeleteRangeRequest, KeyRange, KeyValue,
    PutRequest, RangeRequest, Revision, SortOrder, SortTarget, TxnOp, TxnRequest,
};

impl Server {
    pub(super) async fn election(&self, request: ElectionRequest) -> ClientReply {
        // Any member serves every request (as in etcd: the election server runs on the member
        // the request reached; a follower's proposals and reads go through the leader).
        let reply = match request {
            ElectionRequest::Campaign { name, lease, value } => {
                let (mutex, step) = EtcdMutex::campaign(&name, lease, &value);
                match self.run_mutex(mutex, step).await {
                    ClientReply::Locked { key, revision } => {
                        ElectionReply::Elected(LeaderKey { name, key, rev: revision, lease })
                    }
                    ClientReply::LockFailed { reason } => ElectionReply::Failed { reason },
                    other => return other,
                }
            }
            ElectionRequest::Proclaim { leader, value } => {
                let put = PutRequest {
                    key: leader.key.clone(),
                    value,
                    lease: leader.lease,
                    prev_kv: false,
                    ignore_lease: false,
                };
                match self.if_leader(&leader, TxnOp::Put(put)).await {
                    Ok(true) => ElectionReply::Proclaimed,
                    Ok(false) => ElectionReply::NotLeader,
                    Err(reply) => return reply,
                }
            }
            ElectionRequest::Resign { leader } => {
                let delete = DeleteRangeRequest { range: KeyRange::Key(leader.key.clone()), prev_kv: false };
                match self.if_leader(&leader, TxnOp::DeleteRange(delete)).await {
                    // Resigning a leadership that is already over is not an error (etcd).
                    Ok(_) => ElectionReply::Resigned,
                    Err(reply) => return reply,
                }
            }
            ElectionRequest::Leader { name } => {
                if let Err(reply) = self.read_index().await {
                    return reply;
                }
                ElectionReply::Leader(self.current_leader_of(&name))
            }
            ElectionRequest::Observe { name, seen, wait_ms } => return self.observe(&name, seen, wait_ms).await,
        };
        ClientReply::Election(reply)
    }

    /// Runs `op` only if `leader`'s key still exists with its create_revision: whether it ran.
    async fn if_leader(&self, leader: &LeaderKey, op: TxnOp) -> Result<bool, ClientReply> {
        let txn = TxnRequest {
            compare: vec![Compare {
                key: leader.key.clone(),
                result: CompareResult::Equal,
                target: CompareTarget::CreateRevision(leader.rev),
            }],
            success: vec![op],
            failure: Vec::new(),
        };
        match self.write(Command::Txn(txn)).await {
            ClientReply::Write(CommandResponse::Txn(response)) => Ok(response.succeeded),
            ClientReply::Write(CommandResponse::Error(error)) => {
                Err(ClientReply::Election(ElectionReply::Failed { reason: error.to_string() }))
            }
            other => Err(other),
        }
    }

    /// The oldest key under `<name>/` in this server's applied state.
    fn current_leader_of(&self, name: &str) -> Option<KeyValue> {
        let mut request = RangeRequest::new(KeyRange::Prefix(format!("{name}/")));
        request.sort = Some((SortTarget::CreateRevision, SortOrder::Ascend));
        request.limit = 1;
        let response = lock(&self.applied).store.range(&request).expect("a current read succeeds");
        response.kvs.into_iter().next()
    }

    /// etcd's Observe as a long-poll: the leader as soon as it differs from `seen`.
    async fn observe(&self, name: &str, seen: Option<(Revision, Revision)>, wait_ms: u64) -> ClientReply {
        let deadline = self.clock.now().plus_ms(wait_ms);
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let leader = self.current_leader_of(name);
            let now = leader.as_ref().map(|kv| (kv.create_revision, kv.mod_revision));
            if seen.is_none() || now != seen {
                return ClientReply::Election(ElectionReply::Leader(leader));
            }
            let remaining_ms = self.clock.now().ms_until(deadline);
            let woke =
                remaining_ms > 0 && madsim::time::timeout(Duration::from_millis(remaining_ms), notified).await.is_ok();
            if !woke {
                return ClientReply::Election(ElectionReply::Leader(leader));
            }
        }
    }
}

//! The ZooKeeper view's server side: reads from this server's applied state, writes through the
//! leader, `sync`, and watch long-polls (see `crate::zk` for the semantics).

use std::time::Duration;

use super::{Server, lock};
use crate::rpc::{ClientReply, ClientRequest, ZkReply, ZkRequest};
use crate::store::{Command, CommandResponse, Revision, Store};
use crate::zk::{WatchKind, ZkWrite, tree, watch};
use openraft_rt::WatchReceiver as _;

/// How long a server waits to apply what a client has already seen (or a write it forwarded)
/// before giving up on the request.
const CATCH_UP: Duration = Duration::from_millis(500);

/// How long a server serves clients without hearing its quorum: ZooKeeper's `syncLimit` ticks.
/// A follower's socket to its leader times out after `tickTime * syncLimit` (`Learner`'s
/// `setSoTimeout`), and a leader that has not heard a quorum of followers within `syncLimit`
/// ticks gives up ("Not sufficient followers synced", `Leader.lead`); either way the server goes
/// back to looking for a leader and closes every client connection, refusing new ones until it
/// rejoins a quorum. 2.5 s is the real runner's ensemble (tickTime 500 ms, syncLimit 5;
/// `real/src/cluster/zookeeper.rs`); ZooKeeper's sample configuration gives 10 s.
pub const SYNC_LIMIT: Duration = Duration::from_millis(2500);

impl Server {
    pub(super) async fn zk(&self, request: ZkRequest) -> ClientReply {
        if !matches!(request, ZkRequest::ReadIndex | ZkRequest::Touch { .. })
            && let Err(reason) = self.zk_serving()
        {
            return ClientReply::Unavailable { reason: format!("not serving: {reason}") };
        }
        match request {
            ZkRequest::CreateSession { ttl_ms } => self.zk_create_session(ttl_ms).await,
            ZkRequest::Ping { session, validate } => self.zk_ping(session, validate).await,
            ZkRequest::Touch { session } => self.zk_touch(session),
            ZkRequest::Write(write) => self.zk_write(write).await,
            ZkRequest::Exists { path, seen } => {
                self.zk_read(seen, |store| ZkReply::Exists {
                    zxid: store.revision(),
                    result: tree::exists(store, &path),
                })
                .await
            }
            ZkRequest::GetData { path, seen } => {
                self.zk_read(seen, |store| ZkReply::Data {
                    zxid: store.revision(),
                    result: tree::get_data(store, &path),
                })
                .await
            }
            ZkRequest::GetChildren { path, seen } => {
                self.zk_read(seen, |store| ZkReply::Children {
                    zxid: store.revision(),
                    result: tree::get_children(store, &path),
                })
                .await
            }
            ZkRequest::Sync => self.zk_sync().await,
            ZkRequest::Watch { path, kind, after, wait_ms } => self.zk_watch(&path, kind, after, wait_ms).await,
            ZkRequest::ReadIndex => match self.read_index().await {
                Ok(()) => ClientReply::Zk(ZkReply::Synced { zxid: self.applied_revision() }),
                Err(reply) => reply,
            },
        }
    }

    /// Whether this server is part of a quorum now, as a ZooKeeper server must be to serve
    /// clients (see [`SYNC_LIMIT`]): a leader heard by a quorum, or a follower hearing its leader,
    /// within the limit, by this server's monotonic clock.
    fn zk_serving(&self) -> Result<(), String> {
        let now = self.clock.now();
        let limit_ms = SYNC_LIMIT.as_millis() as u64;
        let within = |at: crate::clock::LocalTime| at.ms_until(now) <= limit_ms;
        if self.raft.is_leader() {
            let acked = self.raft.metrics().borrow_watched().last_quorum_acked.clone();
            return match acked.map(|at| at.into_inner().0) {
                Some(at) if within(at) => Ok(()),
                Some(at) => Err(format!("leader {} without a quorum for {} ms", self.name, at.ms_until(now))),
                None => Err(format!("leader {} not yet acknowledged by a quorum", self.name)),
            };
        }
        match self.heard.leader_at() {
            Some(at) if within(at) => Ok(()),
            Some(at) => Err(format!("{} has not heard a leader for {} ms", self.name, at.ms_until(now))),
            None => Err(format!("{} has not heard a leader yet", self.name)),
        }
    }

    /// ZooKeeper's createSession: a session is a transaction through the leader (here a lease).
    async fn zk_create_session(&self, ttl_ms: u64) -> ClientReply {
        let command = Command::LeaseGrant { id: 0, ttl_ms };
        if self.raft.is_leader() {
            return self.propose(command).await;
        }
        let response = match self.forward(command).await {
            Ok(applied) => applied.into_command(),
            Err(reason) => return ClientReply::Unavailable { reason: format!("forwarding to the leader: {reason}") },
        };
        // A follower answers once it has applied the session's creation itself (its
        // FinalRequestProcessor sends the ConnectResponse), so the new session's first reads
        // there see every transaction before it.
        if let CommandResponse::LeaseGrant { header, .. } = &response
            && !self.wait_applied(header.revision).await
        {
            return ClientReply::Unavailable { reason: format!("zxid {} not applied here in time", header.revision) };
        }
        ClientReply::Write(response)
    }

    /// A client's ping, or with `validate` its reconnection (the session's validation). On the
    /// leader its lessor renews the lease. A follower answers a ping from its own copy of the
    /// sessions and passes the touch on to the leader without waiting (a ZooKeeper follower
    /// keeps its clients' touches and reports them in its next ping to the leader,
    /// `LearnerSessionTracker`); a reconnection it validates with the leader first
    /// (`Learner.validateSession`). `LeaseNotFound`: the session expired, which the client
    /// learns here.
    async fn zk_ping(&self, session: crate::store::LeaseId, validate: bool) -> ClientReply {
        if self.raft.is_leader() {
            return self.keep_alive(session).await;
        }
        let Some(leader) = self.raft.current_leader().await else {
            return ClientReply::Unavailable { reason: "no leader known".into() };
        };
        let Some(addr) = self.members.get(&leader).copied() else {
            return ClientReply::Unavailable { reason: format!("leader s{leader} is not a member") };
        };
        if !validate {
            let request = ClientRequest::Zk(ZkRequest::Touch { session });
            let ttl_ms = lock(&self.applied).store.lease(session).map(|lease| lease.ttl_ms);
            let Some(ttl_ms) = ttl_ms else {
                return ClientReply::LeaseNotFound;
            };
            let endpoint = self.endpoint.clone();
            madsim::task::spawn(async move {
                let _ = endpoint.call(addr, request, Duration::from_secs(1)).await;
            });
            return ClientReply::KeptAlive { ttl_ms };
        }
        let request = ClientRequest::KeepAlive { lease: session };
        match self.endpoint.call(addr, request, Duration::from_secs(1)).await {
            Ok(reply @ (ClientReply::KeptAlive { .. } | ClientReply::LeaseNotFound)) => reply,
            Ok(other) => {
                ClientReply::Unavailable { reason: format!("validating the session with the leader: {other:?}") }
            }
            Err(error) => {
                ClientReply::Unavailable { reason: format!("validating the session with the leader: {error}") }
            }
        }
    }

    /// A follower's report of a client's ping: the leader's session tracker touches the session
    /// at once, without confirming its leadership first (`Leader`'s handling of a learner's
    /// PING, `touch` of each session it carries), unlike etcd's LeaseKeepAlive.
    fn zk_touch(&self, session: crate::store::LeaseId) -> ClientReply {
        match lock(&self.lessor).renew(session, self.clock.now()) {
            Ok(ttl_ms) => ClientReply::KeptAlive { ttl_ms },
            Err(crate::lessor::RenewError::LeaseNotFound) => ClientReply::LeaseNotFound,
            Err(crate::lessor::RenewError::NotPrimary) => ClientReply::NotLeader { leader: None },
        }
    }

    /// The leader applies the write; a follower forwards it and answers once it has applied the
    /// write itself, as a ZooKeeper follower does.
    async fn zk_write(&self, write: ZkWrite) -> ClientReply {
        let command = Command::Zk(write);
        let response = if self.raft.is_leader() {
            match self.propose(command).await {
                ClientReply::Write(response) => response,
                other => return other,
            }
        } else {
            match self.forward(command).await {
                Ok(applied) => applied.into_command(),
                Err(reason) => {
                    return ClientReply::Unavailable { reason: format!("forwarding to the leader: {reason}") };
                }
            }
        };
        let CommandResponse::Zk { header, result } = response else {
            crate::rpc::answered_wrongly("a ZooKeeper write", &response)
        };
        if !self.wait_applied(header.revision).await {
            return ClientReply::Unavailable { reason: format!("zxid {} not applied here in time", header.revision) };
        }
        ClientReply::Zk(ZkReply::Write { zxid: header.revision, result })
    }

    /// A read from this server's applied state, once it has applied what the client has seen.
    async fn zk_read(&self, seen: Revision, read: impl FnOnce(&Store) -> ZkReply) -> ClientReply {
        if !self.wait_applied(seen).await {
            return ClientReply::Unavailable { reason: format!("this server has not applied zxid {seen} yet") };
        }
        ClientReply::Zk(read(&lock(&self.applied).store))
    }

    /// ZooKeeper's sync: learn the leader's commit point and apply up to it.
    async fn zk_sync(&self) -> ClientReply {
        let zxid = if self.raft.is_leader() {
            if let Err(reply) = self.read_index().await {
                return reply;
            }
            self.applied_revision()
        } else {
            let Some(leader) = self.raft.current_leader().await else {
                return ClientReply::Unavailable { reason: "no leader known".into() };
            };
            let Some(addr) = self.members.get(&leader).copied() else {
                return ClientReply::Unavailable { reason: format!("leader s{leader} is not a member") };
            };
            let request = ClientRequest::Zk(ZkRequest::ReadIndex);
            match self.endpoint.call(addr, request, Duration::from_secs(1)).await {
                Ok(ClientReply::Zk(ZkReply::Synced { zxid })) => zxid,
                Ok(other) => return ClientReply::Unavailable { reason: format!("sync through the leader: {other:?}") },
                Err(error) => return ClientReply::Unavailable { reason: format!("sync through the leader: {error}") },
            }
        };
        match self.wait_applied(zxid).await {
            true => ClientReply::Zk(ZkReply::Synced { zxid }),
            false => ClientReply::Unavailable { reason: format!("zxid {zxid} not applied here in time") },
        }
    }

    /// The notifications for a watch on `path` after `after`, as soon as there is one or when
    /// `wait_ms` of local time has passed.
    async fn zk_watch(&self, path: &str, kind: WatchKind, after: Revision, wait_ms: u64) -> ClientReply {
        let range = watch::range_of(path, kind);
        let deadline = self.clock.now().plus_ms(wait_ms);
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let zxid = {
                let applied = lock(&self.applied);
                let store = &applied.store;
                match store.events(&range, after + 1, false) {
                    Err(error) => {
                        return ClientReply::Zk(ZkReply::Watch { zxid: store.revision(), result: Err(error) });
                    }
                    Ok(events) => {
                        let fired = watch::fire_all(path, kind, &events);
                        if !fired.is_empty() {
                            return ClientReply::Zk(ZkReply::Watch { zxid: store.revision(), result: Ok(fired) });
                        }
                    }
                }
                store.revision()
            };
            let remaining_ms = self.clock.now().ms_until(deadline);
            let woke =
                remaining_ms > 0 && madsim::time::timeout(Duration::from_millis(remaining_ms), notified).await.is_ok();
            if !woke {
                // Nothing fired up to `zxid` (possibly below `after` on a lagging server: the
                // client keeps its own resume point).
                return ClientReply::Zk(ZkReply::Watch { zxid, result: Ok(Vec::new()) });
            }
        }
    }

    /// Waits (up to [`CATCH_UP`] of local time) until this server has applied `revision`.
    async fn wait_applied(&self, revision: Revision) -> bool {
        let deadline = self.clock.now().plus_ms(CATCH_UP.as_millis() as u64);
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.applied_revision() >= revision {
                return true;
            }
            let remaining_ms = self.clock.now().ms_until(deadline);
            if remaining_ms == 0 || madsim::time::timeout(Duration::from_millis(remaining_ms), notified).await.is_err()
            {
                return self.applied_revision() >= revision;
            }
        }
    }

    fn applied_revision(&self) -> Revision {
        lock(&self.applied).store.revision()
    }
}

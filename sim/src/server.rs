//! One server node: a Raft member that replicates the store, runs the lessor and answers
//! clients (etcd's KV, Lease and Watch services over madsim RPC).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use coordsim_checker::history::{Event, RaftRole};
use madsim::net::Endpoint;
use openraft::{BasicNode, ReadPolicy, ServerState};
use openraft_rt::WatchReceiver;
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::lessor::{Lessor, RenewError};
use crate::raft::{
    AppendRpc, Applied, ApplyResult, Durable, LogStore, Network, PreVoteRpc, Raft, SnapshotRpc, StateMachine, VoteRpc,
};
use crate::recorder::Recorder;
use crate::rpc::{ClientReply, ClientRequest, WatchBatch};
use crate::store::{Command, CommandResponse, KeyRange, LeaseId, Revision, RevokeReason};

/// The port every server listens on.
pub const SERVER_PORT: u16 = 2379;

/// How often the primary looks for expired leases (etcd checks every 500 ms; a finer tick keeps
/// the expiry bound tight in short scenarios).
const EXPIRY_TICK: Duration = Duration::from_millis(50);

/// What a server needs to start (or restart).
#[derive(Clone, Debug)]
pub struct ServerSpec {
    pub id: u64,
    pub name: String,
    /// Every voter: id → address (including this server).
    pub members: BTreeMap<u64, SocketAddr>,
    /// Whether this server initializes the cluster on its first start.
    pub bootstrap: bool,
    pub raft: RaftTiming,
}

/// Raft timing, in ms of the server's local clock.
#[derive(Clone, Copy, Debug)]
pub struct RaftTiming {
    pub heartbeat_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
}

impl Default for RaftTiming {
    fn default() -> Self {
        RaftTiming { heartbeat_ms: 50, election_timeout_min_ms: 150, election_timeout_max_ms: 300 }
    }
}

struct Server {
    name: String,
    raft: Raft,
    applied: Arc<Mutex<Applied>>,
    lessor: Arc<Mutex<Lessor>>,
    /// Notified after every applied command: wakes watch long-polls.
    applied_notify: Arc<Notify>,
    clock: Clock,
    recorder: Recorder,
}

/// Runs a server until the simulation ends (or the node is killed).
pub async fn serve(spec: ServerSpec, durable: Arc<Mutex<Durable>>, clock: Clock, recorder: Recorder) {
    let addr = spec.members[&spec.id];
    let endpoint = Endpoint::bind(addr).await.expect("a server binds its own address");

    let lessor = Arc::new(Mutex::new(Lessor::default()));
    let applied_notify = Arc::new(Notify::new());
    let on_apply = {
        let lessor = lessor.clone();
        let notify = applied_notify.clone();
        let clock = clock.clone();
        Arc::new(move |command: &Command, response: &CommandResponse| {
            track_leases(&mut lock(&lessor), command, response, &clock);
            notify.notify_waiters();
        })
    };
    let log_store = LogStore::new(durable.clone());
    let snapshot = durable.lock().expect("durable state lock poisoned").snapshot.clone();
    let state_machine = StateMachine::new(log_store.clone(), snapshot, on_apply);
    let applied = state_machine.applied();

    let config = openraft::Config {
        cluster_name: "coordsim".to_string(),
        heartbeat_interval: spec.raft.heartbeat_ms,
        election_timeout_min: spec.raft.election_timeout_min_ms,
        election_timeout_max: spec.raft.election_timeout_max_ms,
        enable_pre_vote: Some(true),
        ..Default::default()
    };
    let config = Arc::new(config.validate().expect("raft timing is validated with the scenario"));
    let raft = Raft::new(spec.id, config, Network::new(endpoint.clone()), log_store, state_machine)
        .await
        .expect("raft starts on a fresh or recovered log");

    let server = Arc::new(Server {
        name: spec.name.clone(),
        raft: raft.clone(),
        applied,
        lessor,
        applied_notify,
        clock,
        recorder,
    });
    register_raft_handlers(&endpoint, &raft);
    let handler = server.clone();
    endpoint.add_rpc_handler(move |request: ClientRequest| {
        let server = handler.clone();
        async move { server.handle(request).await }
    });

    if spec.bootstrap && !raft.is_initialized().await.expect("raft is running") {
        let members: BTreeMap<u64, BasicNode> =
            spec.members.iter().map(|(id, addr)| (*id, BasicNode::new(addr.to_string()))).collect();
        // Losing this race to another server's election is fine: the cluster exists either way.
        let _ = raft.initialize(members).await;
    }

    madsim::task::spawn(server.clone().follow_role());
    server.expire_leases().await;
}

fn register_raft_handlers(endpoint: &Endpoint, raft: &Raft) {
    let r = raft.clone();
    endpoint.add_rpc_handler(move |AppendRpc(rpc)| {
        let raft = r.clone();
        async move { raft.append_entries(rpc).await.map_err(|e| e.to_string()) }
    });
    let r = raft.clone();
    endpoint.add_rpc_handler(move |VoteRpc(rpc)| {
        let raft = r.clone();
        async move { raft.vote(rpc).await.map_err(|e| e.to_string()) }
    });
    let r = raft.clone();
    endpoint.add_rpc_handler(move |PreVoteRpc(rpc)| {
        let raft = r.clone();
        async move { raft.pre_vote(rpc).await.map_err(|e| e.to_string()) }
    });
    let r = raft.clone();
    endpoint.add_rpc_handler(move |SnapshotRpc { vote, meta, data }| {
        let raft = r.clone();
        async move {
            let snapshot = openraft::Snapshot { meta, snapshot: data };
            raft.install_full_snapshot(vote, snapshot).await.map_err(|e| e.to_string())
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().expect("server state lock poisoned")
}

/// Keeps the lessor in step with the replicated lease table.
fn track_leases(lessor: &mut Lessor, command: &Command, response: &CommandResponse, clock: &Clock) {
    match (command, response) {
        (Command::LeaseGrant { .. }, CommandResponse::LeaseGrant { id, ttl_ms, .. }) => {
            lessor.on_grant(*id, *ttl_ms, clock.now());
        }
        (Command::LeaseRevoke { id, .. }, CommandResponse::LeaseRevoke { .. }) => lessor.on_revoke(*id),
        _ => {}
    }
}

impl Server {
    async fn handle(&self, request: ClientRequest) -> ClientReply {
        match request {
            ClientRequest::Write(command) => self.write(command).await,
            ClientRequest::Range { request, linearizable } => {
                if linearizable && let Err(reply) = self.read_index().await {
                    return reply;
                }
                ClientReply::Range(lock(&self.applied).store.range(&request))
            }
            ClientRequest::KeepAlive { lease } => self.keep_alive(lease).await,
            ClientRequest::Watch { range, from, wait_ms } => self.watch(range, from, wait_ms).await,
        }
    }

    async fn write(&self, command: Command) -> ClientReply {
        match self.raft.client_write(command).await {
            Ok(response) => match response.data {
                ApplyResult::Command(response) => ClientReply::Write(response),
                ApplyResult::Internal => unreachable!("a client command applies as a command"),
            },
            Err(error) => match error.forward_to_leader() {
                Some(forward) => ClientReply::NotLeader { leader: forward.leader_id },
                None => ClientReply::Unavailable { reason: error.to_string() },
            },
        }
    }

    /// Confirms leadership with a quorum and waits until the state machine has applied
    /// everything committed before the read (Raft §6.4, read index).
    async fn read_index(&self) -> Result<(), ClientReply> {
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => Ok(()),
            Err(error) => Err(match error.forward_to_leader() {
                Some(forward) => ClientReply::NotLeader { leader: forward.leader_id },
                None => ClientReply::Unavailable { reason: error.to_string() },
            }),
        }
    }

    /// etcd LeaseKeepAlive: only a leader that can still reach a quorum may extend a lease, or a
    /// deposed leader would acknowledge renewals the cluster never made (docs/cases/03).
    async fn keep_alive(&self, lease: LeaseId) -> ClientReply {
        if let Err(reply) = self.read_index().await {
            return reply;
        }
        let renewed = lock(&self.lessor).renew(lease, self.clock.now());
        match renewed {
            Ok(ttl_ms) => ClientReply::KeptAlive { ttl_ms },
            Err(RenewError::LeaseNotFound) => ClientReply::LeaseNotFound,
            Err(RenewError::NotPrimary) => ClientReply::NotLeader { leader: None },
        }
    }

    /// Long-poll for events in `range` from revision `from`, served from this server's applied
    /// state (any member can serve a watch, as in etcd).
    async fn watch(&self, range: KeyRange, from: Revision, wait_ms: u64) -> ClientReply {
        let deadline = self.clock.now().plus_ms(wait_ms);
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let header_revision = {
                let applied = lock(&self.applied);
                match applied.store.events(&range, from, false) {
                    Err(error) => return ClientReply::Watch(Err(error)),
                    Ok(events) if !events.is_empty() => {
                        return ClientReply::Watch(Ok(WatchBatch {
                            header_revision: applied.store.revision(),
                            events,
                        }));
                    }
                    Ok(_) => applied.store.revision(),
                }
            };
            let remaining_ms = self.clock.now().ms_until(deadline);
            let woke =
                remaining_ms > 0 && madsim::time::timeout(Duration::from_millis(remaining_ms), notified).await.is_ok();
            if !woke {
                return ClientReply::Watch(Ok(WatchBatch { header_revision, events: Vec::new() }));
            }
        }
    }

    /// Records role changes and promotes or demotes the lessor with them.
    async fn follow_role(self: Arc<Self>) {
        let mut metrics = self.raft.metrics();
        let mut last: Option<(ServerState, u64)> = None;
        loop {
            let now = {
                let m = metrics.borrow_watched();
                (m.state, m.current_term)
            };
            if last != Some(now) {
                let (state, term) = now;
                let was_leader = matches!(last, Some((ServerState::Leader, _)));
                let is_leader = state == ServerState::Leader;
                if is_leader && !was_leader {
                    let leases: Vec<(LeaseId, u64)> =
                        lock(&self.applied).store.leases().map(|lease| (lease.id, lease.ttl_ms)).collect();
                    lock(&self.lessor).promote(self.clock.now(), leases);
                } else if was_leader && !is_leader {
                    lock(&self.lessor).demote();
                }
                if last.map(|(s, _)| s) != Some(state) || is_leader {
                    self.recorder.record(&self.name, Event::Role { role: role_of(state), term });
                }
                last = Some(now);
            }
            if metrics.changed().await.is_err() {
                return;
            }
        }
    }

    /// The primary's expiry loop: propose the revocation of every lease past its deadline.
    async fn expire_leases(self: Arc<Self>) {
        loop {
            self.clock.sleep(EXPIRY_TICK).await;
            let expired = lock(&self.lessor).take_expired(self.clock.now());
            for lease in expired {
                let server = self.clone();
                madsim::task::spawn(async move {
                    let revoke = Command::LeaseRevoke { id: lease, reason: RevokeReason::Expired };
                    match server.raft.client_write(revoke).await {
                        // Recorded once the revocation is committed and applied here: that is
                        // when the lease's keys are gone for everyone. A deposed leader's
                        // proposal never gets this far.
                        Ok(response)
                            if matches!(response.data, ApplyResult::Command(CommandResponse::LeaseRevoke { .. })) =>
                        {
                            server.recorder.record(&server.name, Event::LeaseExpiry { lease });
                        }
                        Ok(_) => {} // already revoked by its owner
                        Err(_) => lock(&server.lessor).revoke_failed(lease),
                    }
                });
            }
        }
    }
}

fn role_of(state: ServerState) -> RaftRole {
    match state {
        ServerState::Leader => RaftRole::Leader,
        ServerState::Follower => RaftRole::Follower,
        ServerState::Candidate => RaftRole::Candidate,
        ServerState::Learner => RaftRole::Learner,
        ServerState::Shutdown => RaftRole::Shutdown,
    }
}

//! One server node: a Raft member that replicates the store, runs the lessor and answers
//! clients (etcd's KV, Lease and Watch services over madsim RPC; the ZooKeeper view in `zk`).

mod election;
mod forward;
pub mod redis;
mod timers;
mod zk;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::net::Endpoint;
use coordsim_checker::history::{Event, RaftRole, ServiceTiming};
use openraft::{BasicNode, ReadPolicy, ServerState};
use openraft_rt::WatchReceiver;
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::lessor::{LeaseInfo, LeasePolicy, Lessor, RenewError};
use crate::raft::{
    AppendRpc, AppendStreams, Applied, ApplyResult, Durable, LogStore, Network, OnAppend, PreVoteRpc, Raft,
    SnapshotRpc, StateMachine, StreamAppendRpc, VoteRpc, is_higher_vote,
};
use crate::recipe::mutex::EtcdMutex;
use crate::recipe::{EtcdInput, EtcdStep};
use crate::recorder::Recorder;
use crate::rpc::{ClientReply, ClientRequest, WatchBatch, WatchOptions};
use crate::scenario::Bugs;
use crate::store::{
    Command, CommandResponse, DeleteRangeRequest, EventKind, KeyRange, LeaseId, Revision, RevokeReason,
};
use crate::timing::{Disk, ServerCosts, ServerTimes};
use timers::Heard;

/// The port every server listens on.
pub const SERVER_PORT: u16 = 2379;

/// How often the primary looks for due lease checkpoints (etcd's lessor `runLoop`: every 500 ms).
const CHECKPOINT_TICK: Duration = Duration::from_millis(500);

/// The shortest TTL the server grants: shorter requests are raised to it, as etcd raises them to
/// its minimum (a lease must outlast an election).
pub const LEASE_TTL_MIN_MS: u64 = 1000;

/// How often the primary looks for expired leases (etcd checks every 500 ms; a finer tick keeps
/// the expiry bound tight in short scenarios).
const EXPIRY_TICK: Duration = Duration::from_millis(50);

/// etcd's request timeout without the election timeout's share (etcdserver/config.go
/// `ReqTimeout`: "5s for queue waiting, computation and disk IO delay").
const ETCD_REQUEST_TIMEOUT_BASE: Duration = Duration::from_secs(5);

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
    pub bugs: Bugs,
    /// How the lessor checkpoints and promotes (`cluster.etcd`).
    pub lease: LeasePolicy,
    /// Whether compaction keeps a deletion made at the compact revision for a watch created
    /// there (`cluster.etcd.version`: `EtcdRelease::keeps_tombstone_at_compact_revision`).
    pub keeps_compact_tombstone: bool,
    /// True time the apply loop spends per watcher notified of an event (`cluster.watch_event_cost`).
    pub watch_event_cost: Duration,
    /// The time model's server costs (`[timing]`); `None`: serving costs nothing.
    pub costs: Option<ServerTimes>,
}

pub use coordsim_core::scenario::RaftTiming;

struct Server {
    id: u64,
    name: String,
    raft: Raft,
    endpoint: Endpoint,
    members: BTreeMap<u64, SocketAddr>,
    bugs: Bugs,
    keeps_compact_tombstone: bool,
    applied: Arc<Mutex<Applied>>,
    lessor: Arc<Mutex<Lessor>>,
    /// Notified after every applied command: wakes watch long-polls.
    applied_notify: Arc<Notify>,
    clock: Clock,
    recorder: Recorder,
    /// The shortest election timeout (`cluster.election_timeout`): etcd's request timeout is
    /// made of it.
    election_timeout: Duration,
    /// When this server last accepted an AppendEntries (a heartbeat included) from a leader, or
    /// granted a vote, by its monotonic clock: a ZooKeeper follower serves clients only while it
    /// hears its leader, and the election timer counts from either.
    heard: Heard,
}

/// Runs a server until the simulation ends (or the node is killed).
pub async fn serve(spec: ServerSpec, durable: Arc<Mutex<Durable>>, clock: Clock, recorder: Recorder) {
    let addr = spec.members[&spec.id];
    let endpoint = Endpoint::bind(addr).await.expect("a server binds its own address");

    let costs = spec.costs.clone().map(|times| ServerCosts::new(times, recorder.queue_record(&spec.name)));
    let fsync = durable.lock().expect("durable state lock poisoned").fsync;
    // Without fsync the log reaches the disk now and then, off the path of any request.
    let disk = costs.as_ref().filter(|_| fsync).map(|costs| Disk::start(costs.times.fsync.clone()));
    let lessor = Arc::new(Mutex::new(Lessor::new(spec.lease)));
    let applied_notify = Arc::new(Notify::new());
    let on_apply = {
        let lessor = lessor.clone();
        let notify = applied_notify.clone();
        let clock = clock.clone();
        let (recorder, name) = (recorder.clone(), spec.name.clone());
        Arc::new(move |command: &Command, response: &CommandResponse| {
            track_leases(&mut lock(&lessor), command, response, &clock);
            if let (Command::LeaseRevoke { id, reason: RevokeReason::Expired }, CommandResponse::LeaseRevoke { .. }) =
                (command, response)
            {
                // Every server applies it; the first application is when the keys are gone.
                recorder.record_once(&name, Event::LeaseExpiry { lease: *id, latest_ns: None });
            }
            notify.notify_waiters();
        })
    };
    let sync_blocks = costs.as_ref().is_some_and(|costs| costs.times.sync_blocks_consensus);
    let leader_unsynced = costs.as_ref().is_some_and(|costs| costs.times.leader_commits_before_sync);
    let log_store =
        LogStore::new(durable.clone(), disk, sync_blocks).leader_commits_before_sync(spec.id, leader_unsynced);
    let snapshot = durable.lock().expect("durable state lock poisoned").snapshot.clone();
    let state_machine = StateMachine::new(log_store.clone(), snapshot, on_apply, spec.watch_event_cost, costs.clone());
    let applied = state_machine.applied();

    let config = openraft::Config {
        cluster_name: "coordsim".to_string(),
        heartbeat_interval: spec.raft.heartbeat_ms,
        election_timeout_min: spec.raft.election_timeout_min_ms,
        election_timeout_max: spec.raft.election_timeout_max_ms,
        enable_pre_vote: Some(true),
        // The server keeps Raft's heartbeat and election timers itself (timers.rs).
        enable_tick: false,
        ..Default::default()
    };
    let config = Arc::new(config.validate().expect("raft timing is validated with the scenario"));
    let raft = Raft::new(
        spec.id,
        config,
        Network::new(
            spec.id,
            endpoint.clone(),
            spec.raft.election_timeout_min_ms,
            costs.as_ref().map_or(1, |costs| costs.times.max_inflight_appends as usize),
        ),
        log_store,
        state_machine,
    )
    .await
    .expect("raft starts on a fresh or recovered log");

    let heard = Heard::default();
    let server = Arc::new(Server {
        id: spec.id,
        name: spec.name.clone(),
        raft: raft.clone(),
        endpoint: endpoint.clone(),
        members: spec.members.clone(),
        bugs: spec.bugs,
        keeps_compact_tombstone: spec.keeps_compact_tombstone,
        applied,
        lessor,
        applied_notify,
        clock: clock.clone(),
        recorder,
        election_timeout: Duration::from_millis(spec.raft.election_timeout_min_ms),
        heard: heard.clone(),
    });
    register_raft_handlers(&endpoint, &raft, heard.clone(), clock.clone(), costs.clone());
    madsim::task::spawn(timers::drive(raft.clone(), clock, heard, spec.raft.clone()));
    server.serve_forwarded();
    {
        let handler = server.clone();
        endpoint.add_call_handler(move |request: ClientRequest| {
            let (server, costs) = (handler.clone(), costs.clone());
            server.recorder.served_request();
            async move {
                if let Some(costs) = &costs {
                    costs.request(request.class()).await;
                }
                server.handle(request).await
            }
        });
    }

    if spec.bootstrap && !raft.is_initialized().await.expect("raft is running") {
        let members: BTreeMap<u64, BasicNode> =
            spec.members.iter().map(|(id, addr)| (*id, BasicNode::new(addr.to_string()))).collect();
        // Losing this race to another server's election is fine: the cluster exists either way.
        let _ = raft.initialize(members).await;
    }

    if !fsync {
        madsim::task::spawn(sync_periodically(durable.clone(), server.clock.clone()));
    }
    madsim::task::spawn(server.clone().follow_role());
    madsim::task::spawn(server.clone().checkpoint_leases());
    server.expire_leases().await;
}

/// How often a server without fsync flushes its log and vote to disk.
const SYNC_INTERVAL: Duration = Duration::from_millis(100);

async fn sync_periodically(durable: Arc<Mutex<Durable>>, clock: Clock) {
    loop {
        clock.sleep(SYNC_INTERVAL).await;
        durable.lock().expect("durable state lock poisoned").sync();
    }
}

fn register_raft_handlers(
    endpoint: &Endpoint,
    raft: &Raft,
    heard: Heard,
    clock: Clock,
    costs: Option<Arc<ServerCosts>>,
) {
    // Pipelined appends (raft::stream), only where the time model asks for them: without,
    // a run spawns exactly the tasks it did before they existed.
    if costs.as_ref().is_some_and(|costs| costs.times.max_inflight_appends > 1) {
        let (heard, clock) = (heard.clone(), clock.clone());
        // Any answer but "your vote is stale" means a current leader reached us.
        let on_answer: OnAppend = Arc::new(move |result| {
            if !is_higher_vote(result) {
                heard.leader(clock.now());
            }
        });
        let streams = AppendStreams::new(raft.clone(), costs.clone(), on_answer);
        endpoint.add_rpc_handler(move |request: StreamAppendRpc| streams.accept(request));
    }
    // Every Raft message takes its turn on the receiver's CPU first.
    let work = move || {
        let costs = costs.clone();
        async move {
            if let Some(costs) = costs {
                costs.peer_message().await;
            }
        }
    };
    let (r, turn) = (raft.clone(), work.clone());
    let (appended, append_clock) = (heard.clone(), clock.clone());
    endpoint.add_rpc_handler(move |AppendRpc(rpc)| {
        let (raft, turn) = (r.clone(), turn());
        let (heard, clock) = (appended.clone(), append_clock.clone());
        async move {
            turn.await;
            let response = raft.append_entries(rpc).await.map_err(|e| e.to_string());
            // Any answer but "your vote is stale" means a current leader reached us.
            if matches!(&response, Ok(r) if !matches!(r, openraft::raft::AppendEntriesResponse::HigherVote(_))) {
                heard.leader(clock.now());
            }
            response
        }
    });
    let (r, turn) = (raft.clone(), work.clone());
    let (voted, vote_clock) = (heard.clone(), clock.clone());
    endpoint.add_rpc_handler(move |VoteRpc(rpc)| {
        let (raft, turn) = (r.clone(), turn());
        let (heard, clock) = (voted.clone(), vote_clock.clone());
        async move {
            turn.await;
            let response = raft.vote(rpc).await.map_err(|e| e.to_string());
            // Granting a vote restarts the election timer, as etcd's raft does.
            if matches!(&response, Ok(r) if r.vote_granted) {
                heard.vote_granted(clock.now());
            }
            response
        }
    });
    let (r, turn) = (raft.clone(), work.clone());
    endpoint.add_rpc_handler(move |PreVoteRpc(rpc)| {
        let (raft, turn) = (r.clone(), turn());
        async move {
            turn.await;
            raft.pre_vote(rpc).await.map_err(|e| e.to_string())
        }
    });
    let r = raft.clone();
    endpoint.add_rpc_handler(move |SnapshotRpc { vote, meta, data }| {
        let (raft, turn) = (r.clone(), work());
        let (heard, clock) = (heard.clone(), clock.clone());
        async move {
            turn.await;
            let snapshot = openraft::Snapshot { meta, snapshot: data };
            let response = raft.install_full_snapshot(vote, snapshot).await.map_err(|e| e.to_string());
            // Answered with the leader's own vote: the snapshot came from a current leader.
            if matches!(&response, Ok(r) if r.vote == vote) {
                heard.leader(clock.now());
            }
            response
        }
    });
}

/// A watch long-poll counted among the server's watchers while it waits (and while it reads
/// its events), until it returns or is dropped.
struct WatcherRegistration<'a> {
    applied: &'a Mutex<Applied>,
    id: u64,
}

impl<'a> WatcherRegistration<'a> {
    fn new(applied: &'a Mutex<Applied>, range: KeyRange) -> Self {
        let id = lock(applied).register_watcher(range);
        WatcherRegistration { applied, id }
    }
}

impl Drop for WatcherRegistration<'_> {
    fn drop(&mut self) {
        lock(self.applied).unregister_watcher(self.id);
    }
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
        (Command::LeaseCheckpoint { checkpoints }, _) => {
            for (lease, remaining_ms) in checkpoints {
                lessor.on_checkpoint(*lease, *remaining_ms, clock.now());
            }
        }
        _ => {}
    }
}

impl Server {
    async fn handle(&self, request: ClientRequest) -> ClientReply {
        match request {
            ClientRequest::Write(command) => self.write(command).await,
            ClientRequest::Range { request, linearizable } => {
                // The bug: answer from local state as if it were linearizable.
                let read_index = linearizable && !self.bugs.follower_reads_without_read_index;
                if read_index && let Err(reply) = self.read_index().await {
                    return reply;
                }
                ClientReply::Range(lock(&self.applied).store.range(&request))
            }
            ClientRequest::KeepAlive { lease } => self.keep_alive(lease).await,
            ClientRequest::LeaseTimeToLive { lease, keys } => self.time_to_live(lease, keys).await,
            ClientRequest::LeaseLeases => match self.read_index().await {
                Ok(()) => ClientReply::Leases(lock(&self.applied).store.leases().map(|lease| lease.id).collect()),
                Err(reply) => reply,
            },
            ClientRequest::Watch { range, from, wait_ms, options } => self.watch(range, from, wait_ms, options).await,
            ClientRequest::Lock { name, lease } => self.lock_service(&name, lease).await,
            ClientRequest::Unlock { key } => {
                self.write(Command::DeleteRange(DeleteRangeRequest { range: KeyRange::Key(key), prev_kv: false })).await
            }
            ClientRequest::Zk(request) => self.zk(request).await,
            ClientRequest::Election(request) => self.election(request).await,
            ClientRequest::Status => self.status(),
        }
    }

    /// etcd's Status, from this member's own Raft metrics and applied state.
    fn status(&self) -> ClientReply {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let applied = lock(&self.applied);
        ClientReply::Status {
            member_id: self.id,
            leader: metrics.current_leader,
            raft_term: metrics.current_term,
            raft_index: metrics.last_log_index.unwrap_or(0),
            raft_applied_index: metrics.last_applied.as_ref().map_or(0, |log_id| log_id.index),
            revision: applied.store.revision(),
        }
    }

    /// An etcd request's proposal ([`Server::propose`]), answered "request timed out" once it
    /// has waited etcd's request timeout, as etcd answers one: `processInternalRaftRequestOnce`
    /// (etcdserver/v3_server.go) waits at most `ReqTimeout()`, 5 s plus twice the election
    /// timeout (etcdserver/config.go), on the member's own clock, and the proposal stays in the
    /// log, so its outcome is unknown. ZooKeeper's servers have no such bound: a request waits
    /// until it is answered or its session's connection goes.
    async fn write(&self, command: Command) -> ClientReply {
        let timeout = ETCD_REQUEST_TIMEOUT_BASE + 2 * self.election_timeout;
        // The proposal is polled first: a reply ready at the deadline still counts.
        let (propose, expire) = (std::pin::pin!(self.propose(command)), std::pin::pin!(self.clock.sleep(timeout)));
        match futures::future::select(propose, expire).await {
            futures::future::Either::Left((reply, _)) => reply,
            futures::future::Either::Right(_) => {
                ClientReply::Unavailable { reason: crate::rpc::REQUEST_TIMED_OUT.into() }
            }
        }
    }

    /// A proposal made on this member: on the leader, through its log; on a follower, through
    /// the leader it knows (`forward`), answered once applied here. Where a proposal goes is
    /// decided when it arrives, as etcd's raft decides when it steps the proposal: a member
    /// that believes it leads appends it, and if it turns out deposed (a leader stalled on its
    /// disk), the proposal is lost with its uncommitted log, not forwarded later (its client
    /// has given up on it by then).
    async fn propose(&self, mut command: Command) -> ClientReply {
        if let Command::LeaseGrant { ttl_ms, .. } = &mut command {
            *ttl_ms = (*ttl_ms).max(LEASE_TTL_MIN_MS);
        }
        if let Some(leader) = self.leader_elsewhere().await {
            return self.propose_via_leader(leader, command).await;
        }
        match self.raft.client_write(command).await {
            Ok(response) => ClientReply::Write(response.data.into_command()),
            Err(error) => match error.forward_to_leader() {
                Some(forward) => ClientReply::NotLeader { leader: forward.leader_id },
                None => ClientReply::Unavailable { reason: error.to_string() },
            },
        }
    }

    /// Confirms leadership with a quorum and waits until the state machine has applied
    /// everything committed before the read (Raft §6.4, read index); on a follower, asks the
    /// leader for its read index and waits until this member has applied it (`forward`).
    async fn read_index(&self) -> Result<(), ClientReply> {
        if let Some(leader) = self.leader_elsewhere().await {
            return self.read_index_via_leader(leader).await;
        }
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => Ok(()),
            Err(error) => Err(match error.forward_to_leader() {
                Some(forward) => ClientReply::NotLeader { leader: forward.leader_id },
                None => ClientReply::Unavailable { reason: error.to_string() },
            }),
        }
    }

    /// The leader this member knows, when it is another member: where the requests only the
    /// leader's lessor can answer go.
    async fn leader_elsewhere(&self) -> Option<u64> {
        if self.raft.is_leader() {
            return None;
        }
        self.raft.current_leader().await.filter(|leader| *leader != self.id)
    }

    /// etcd LeaseKeepAlive: only a leader that can still reach a quorum may extend a lease, or a
    /// deposed leader would acknowledge renewals the cluster never made (docs/cases/03; etcd's
    /// `ensureLeadership` in LeaseRenew). A renewal is not replicated, except that with
    /// checkpoints on, a lease carrying a checkpoint has it cleared through the log first, so a
    /// new leader gives it a full TTL (etcd `Renew`, `clearRemainingTTL`).
    async fn keep_alive(&self, lease: LeaseId) -> ClientReply {
        // The bug: a deposed leader whose lessor still thinks it is primary renews on its own.
        let deposed_primary = self.bugs.deposed_leader_expires_leases && !self.raft.is_leader();
        if !deposed_primary {
            if let Some(leader) = self.leader_elsewhere().await {
                return self.relay(leader, ClientRequest::KeepAlive { lease }).await;
            }
            if let Err(reply) = self.read_index().await {
                return reply;
            }
        }
        let (renewed, checkpointing) = {
            let mut lessor = lock(&self.lessor);
            (lessor.renew(lease, self.clock.now()), lessor.policy().checkpoint)
        };
        let ttl_ms = match renewed {
            Ok(ttl_ms) => ttl_ms,
            Err(RenewError::LeaseNotFound) => return ClientReply::LeaseNotFound,
            Err(RenewError::NotPrimary) => return ClientReply::NotLeader { leader: None },
        };
        let carries_checkpoint =
            || lock(&self.applied).store.lease(lease).is_some_and(|lease| lease.remaining_ms.is_some());
        if deposed_primary || !checkpointing || !carries_checkpoint() {
            return ClientReply::KeptAlive { ttl_ms };
        }
        let clear = Command::LeaseCheckpoint { checkpoints: vec![(lease, 0)] };
        match self.raft.client_write(clear).await {
            Ok(_) => ClientReply::KeptAlive { ttl_ms },
            Err(error) => match error.forward_to_leader() {
                Some(forward) => ClientReply::NotLeader { leader: forward.leader_id },
                None => ClientReply::Unavailable { reason: error.to_string() },
            },
        }
    }

    /// etcd LeaseTimeToLive, answered by the leader: its lessor knows the deadline.
    async fn time_to_live(&self, id: LeaseId, keys: bool) -> ClientReply {
        if let Some(leader) = self.leader_elsewhere().await {
            return self.relay(leader, ClientRequest::LeaseTimeToLive { lease: id, keys }).await;
        }
        if let Err(reply) = self.read_index().await {
            return reply;
        }
        let remaining = lock(&self.lessor).remaining_ms(id, self.clock.now());
        let applied = lock(&self.applied);
        match (applied.store.lease(id), remaining) {
            (Some(lease), Some(remaining_ms)) => ClientReply::LeaseTtl {
                lease: id,
                granted_ttl_ms: lease.ttl_ms,
                remaining_ms,
                keys: if keys { lease.keys.iter().cloned().collect() } else { Vec::new() },
            },
            // Known to the store but not to a lessor that just became primary: ask again.
            (Some(_), None) => ClientReply::Unavailable { reason: format!("lease {id} not tracked yet") },
            (None, _) => ClientReply::LeaseNotFound,
        }
    }

    /// etcd's Lock service (server/etcdserver/api/v3lock): runs the mutex recipe on the member
    /// the request reached, against the replicated store (a follower's proposals and reads go
    /// through the leader), and answers once the caller holds the lock. With the
    /// `grant_without_lease_check` bug the recipe skips its final check of the caller's key.
    async fn lock_service(&self, name: &str, lease: LeaseId) -> ClientReply {
        let check_own_key = !self.bugs.grant_without_lease_check;
        let (mutex, step) = EtcdMutex::lock_checked(name, lease, check_own_key);
        self.run_mutex(mutex, step).await
    }

    /// Runs the mutex recipe on this server until the caller holds the lock: `Locked`, or why
    /// not (`LockFailed`, `NotLeader`, `Unavailable`).
    async fn run_mutex(&self, mut mutex: EtcdMutex, mut step: EtcdStep) -> ClientReply {
        loop {
            step = match step {
                EtcdStep::Txn(txn) => match self.write(Command::Txn(txn)).await {
                    ClientReply::Write(CommandResponse::Txn(response)) => mutex.step(EtcdInput::Txn(response)),
                    ClientReply::Write(CommandResponse::Error(error)) => {
                        return ClientReply::LockFailed { reason: error.to_string() };
                    }
                    other => return other,
                },
                EtcdStep::Range(request) => {
                    if let Err(reply) = self.read_index().await {
                        return reply;
                    }
                    match lock(&self.applied).store.range(&request) {
                        Ok(response) => mutex.step(EtcdInput::Range(response)),
                        Err(error) => return ClientReply::LockFailed { reason: error.to_string() },
                    }
                }
                EtcdStep::WaitDelete { key, from_revision } => {
                    if !self.wait_delete(&key, from_revision).await {
                        return ClientReply::Unavailable { reason: "lost leadership while waiting".into() };
                    }
                    mutex.step(EtcdInput::Deleted)
                }
                EtcdStep::Acquired { key, token } => return ClientReply::Locked { key, revision: token },
                EtcdStep::Failed(error) => return ClientReply::LockFailed { reason: error.to_string() },
            };
        }
    }

    /// Waits on this server's applied state until `key` is deleted at or after `from`; false
    /// if the server led when the wait began and stopped leading meanwhile. (On a follower the
    /// wait goes on, as a watch on that member does, until the client gives up.)
    async fn wait_delete(&self, key: &str, from: Revision) -> bool {
        let leading = self.raft.is_leader();
        let range = KeyRange::Key(key.to_string());
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let deleted = match lock(&self.applied).store.events(&range, from, false) {
                Ok(events) => events.iter().any(|event| event.kind == EventKind::Delete),
                // Compacted past `from`: the queue must be looked at again anyway.
                Err(_) => true,
            };
            if deleted {
                return true;
            }
            if leading && !self.raft.is_leader() {
                return false;
            }
            // Re-check leadership now and then even if nothing is applied.
            let _ = madsim::time::timeout(Duration::from_millis(100), notified).await;
        }
    }

    /// Long-poll for events in `range` from revision `from`, served from this server's applied
    /// state (any member can serve a watch, as in etcd).
    ///
    /// A long-poll answered with no events is etcd's progress notification: the watcher may
    /// resume after `header_revision`. Cancelling is the client not polling again: nothing is
    /// kept on the server between polls.
    async fn watch(&self, range: KeyRange, from: Revision, wait_ms: u64, options: WatchOptions) -> ClientReply {
        let deadline = self.clock.now().plus_ms(wait_ms);
        let _registered = WatcherRegistration::new(&self.applied, range.clone());
        loop {
            let notified = self.applied_notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let header_revision = {
                let applied = lock(&self.applied);
                let events = applied.store.events(&range, from, options.prev_kv).map(|mut events| {
                    let at_compact_revision = from == applied.store.compact_revision();
                    // The bug (etcd issues 18089, 19179; docs/cases/05): a watch from exactly
                    // the compact revision loses that revision's events.
                    if self.bugs.watch_skip_at_compaction && at_compact_revision {
                        events.retain(|event| event.kv.mod_revision != from);
                    }
                    // An etcd release before 3.4.34 and 3.5.16 removed a tombstone at the compact
                    // revision with the compaction: that deletion is gone for a watch from it.
                    if !self.keeps_compact_tombstone && at_compact_revision {
                        events.retain(|event| !(event.kind == EventKind::Delete && event.kv.mod_revision == from));
                    }
                    events.retain(|event| match event.kind {
                        EventKind::Put => !options.no_put,
                        EventKind::Delete => !options.no_delete,
                    });
                    events
                });
                match events {
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
    ///
    /// A new leader promotes its lessor only once it has applied an entry of its own term (the
    /// blank entry openraft appends at election): committing that entry commits, and applying
    /// it applies, every entry of earlier terms, the last lease checkpoints among them. At the
    /// moment of its election a follower may not yet know that its predecessor's last
    /// checkpoint committed (the predecessor crashed before its next heartbeat said so); a
    /// lessor promoted then would continue from an older checkpoint and keep a dead client's
    /// lease up to one checkpoint interval too long. etcd promotes at the same point (when it
    /// applies the new term's empty entry: "finished applying all entries from the last
    /// term", etcdserver `applyEntryNormal`).
    async fn follow_role(self: Arc<Self>) {
        let mut metrics = self.raft.metrics();
        let mut last: Option<(ServerState, u64)> = None;
        // The term in which this server's lessor was promoted, while it still leads.
        let mut promoted: Option<u64> = None;
        loop {
            let (now, applied_term) = {
                let m = metrics.borrow_watched();
                ((m.state, m.current_term), m.last_applied.as_ref().map(|log_id| log_id.leader_id.term))
            };
            let (state, term) = now;
            let is_leader = state == ServerState::Leader;
            if last != Some(now) {
                let was_leader = matches!(last, Some((ServerState::Leader, _)));
                if was_leader && !is_leader && !self.bugs.deposed_leader_expires_leases {
                    // (The bug skips this: the deposed leader's lessor stays primary.)
                    if !lock(&self.lessor).policy().revoke_only_while_leading {
                        // etcd before 3.4.31 and 3.5.13: a leader that stalled wakes with its
                        // lessor's expiry check overdue, and the check runs before the raft loop
                        // has applied the step-down that demotes the lessor (measured on real
                        // etcd 3.4.23: the lease gone within 110 ms of the pause's end). Its
                        // revocations are forwarded to the new leader and commit.
                        let expired = lock(&self.lessor).take_expired(self.clock.now());
                        for lease in expired {
                            let server = self.clone();
                            madsim::task::spawn(async move { server.revoke_expired(lease).await });
                        }
                    }
                    lock(&self.lessor).demote();
                }
                if last.map(|(s, _)| s) != Some(state) || is_leader {
                    self.recorder.record(&self.name, Event::Role { role: role_of(state), term });
                }
                last = Some(now);
            }
            if !is_leader {
                promoted = None;
            } else if promotion_due(term, applied_term, promoted) {
                let leases: Vec<LeaseInfo> = lock(&self.applied)
                    .store
                    .leases()
                    .map(|lease| LeaseInfo { id: lease.id, ttl_ms: lease.ttl_ms, remaining_ms: lease.remaining_ms })
                    .collect();
                let reset = self.bugs.ttl_reset_on_leader_change;
                lock(&self.lessor).promote(self.clock.now(), leases, reset);
                self.recorder.record(&self.name, Event::LessorPromoted { term });
                promoted = Some(term);
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
                madsim::task::spawn(async move { server.revoke_expired(lease).await });
            }
        }
    }

    async fn revoke_expired(&self, lease: LeaseId) {
        let revoke = Command::LeaseRevoke { id: lease, reason: RevokeReason::Expired };
        let stale_revokes_commit = !lock(&self.lessor).policy().revoke_only_while_leading;
        let response = if self.raft.is_leader() {
            match self.raft.client_write(revoke.clone()).await {
                Ok(written) => Ok(written.data),
                // An etcd release before the fix (3.4.31, 3.5.13) proposed it all the same, and
                // the raft of a leader that stepped down meanwhile (a stalled leader waking up)
                // forwarded the proposal to the new leader, which committed it.
                Err(error) if stale_revokes_commit && error.forward_to_leader().is_some() => {
                    self.forward_proposal(revoke).await
                }
                Err(error) => Err(error.to_string()),
            }
        } else if self.bugs.deposed_leader_expires_leases {
            // A deposed leader with the bug switch: like etcd before the fix, it proposes through
            // whoever leads now, and the revocation commits.
            self.forward(revoke).await
        } else if stale_revokes_commit {
            // An etcd release before the fix (3.4.31, 3.5.13): the same, through raft's forwarding.
            self.forward_proposal(revoke).await
        } else {
            // The lessor took these leases as expired while it was still primary, and the server
            // has stepped down since (a leader that wakes from a stall does both at once). etcd
            // checks that it still leads before it revokes (`EtcdServer::ensureLeadership` in
            // `revokeExpiredLeases`, server/etcdserver/server.go): a revocation from a member
            // that no longer leads is dropped, not forwarded.
            Err("no longer the leader: the revocation is dropped".to_string())
        };
        // The expiry itself is recorded where the revocation is applied (see `track_leases`),
        // so a leader that crashes right after committing it does not take the record along.
        if response.is_err() {
            lock(&self.lessor).revoke_failed(lease);
        }
    }

    /// Sends a command to the current leader as a client would, once.
    async fn forward(&self, command: Command) -> Result<ApplyResult, String> {
        self.forward_following(command, 0).await
    }

    /// A proposal made on a member that no longer leads, as etcd's raft forwards it: to the
    /// leader the member knows, and if that one says another leads now (a member that has just
    /// stepped down may still name itself), to that one.
    async fn forward_proposal(&self, command: Command) -> Result<ApplyResult, String> {
        self.forward_following(command, 1).await
    }

    /// Sends `command` to the leader this member knows, following up to `redirects` answers
    /// that name another leader.
    async fn forward_following(&self, command: Command, redirects: usize) -> Result<ApplyResult, String> {
        let mut leader = self.raft.current_leader().await.ok_or("no leader known")?;
        let mut redirects_left = redirects;
        loop {
            let addr = *self.members.get(&leader).ok_or("leader not a member")?;
            let request = ClientRequest::Write(command.clone());
            match self.endpoint.call(addr, request, Duration::from_secs(1)).await.map_err(|e| e.to_string())? {
                ClientReply::Write(response) => return Ok(ApplyResult::Command(response)),
                ClientReply::NotLeader { leader: Some(next) } if next != leader && redirects_left > 0 => {
                    redirects_left -= 1;
                    leader = next;
                }
                other => return Err(format!("{other:?}")),
            }
        }
    }

    /// The primary's checkpoint loop: record the remaining TTL of every lease whose checkpoint
    /// is due (see `crate::lessor`; nothing is ever due with checkpoints off, etcd's default).
    async fn checkpoint_leases(self: Arc<Self>) {
        loop {
            self.clock.sleep(CHECKPOINT_TICK).await;
            if !self.raft.is_leader() {
                continue;
            }
            let checkpoints = lock(&self.lessor).due_checkpoints(self.clock.now());
            if checkpoints.is_empty() {
                continue;
            }
            // A failure (lost leadership) is fine: the next leader schedules its own.
            if self.raft.client_write(Command::LeaseCheckpoint { checkpoints: checkpoints.clone() }).await.is_ok() {
                for (lease, remaining_ms) in checkpoints {
                    self.recorder.record(&self.name, Event::LeaseCheckpoint { lease, remaining_ms });
                }
            }
        }
    }
}

/// Whether a leader of `term` should promote its lessor now: not yet promoted in this term, and
/// an entry of this term applied (see `follow_role`).
fn promotion_due(term: u64, applied_term: Option<u64>, promoted: Option<u64>) -> bool {
    promoted != Some(term) && applied_term == Some(term)
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

/// The servers' timing as the history's header carries it for the checkers.
pub fn service_timing(raft: &RaftTiming, lease: &LeasePolicy) -> ServiceTiming {
    ServiceTiming {
        heartbeat_ms: raft.heartbeat_ms,
        election_timeout_min_ms: raft.election_timeout_min_ms,
        election_timeout_max_ms: raft.election_timeout_max_ms,
        lease_expiry_tick_ms: EXPIRY_TICK.as_millis() as u64,
        lease_promotion_extend_ms: lease.promotion_extend_ms,
        // The ZooKeeper view's follower relays a ping's touch to the leader as it answers
        // (`Server::zk_ping`): a network latency, within the checkers' commit allowance.
        renewal_relay_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history without a header is read with `ServiceTiming::SIMULATED`: it must be what the
    /// servers run with by default.
    #[test]
    fn a_history_without_service_timing_is_read_with_the_servers_defaults() {
        let raft = RaftTiming::default();
        let lease = LeasePolicy { promotion_extend_ms: raft.election_timeout_min_ms, ..LeasePolicy::default() };
        assert_eq!(service_timing(&raft, &lease), ServiceTiming::SIMULATED);
        assert_eq!(LeasePolicy::default().promotion_extend_ms, raft.election_timeout_min_ms);
    }
}

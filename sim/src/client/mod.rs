//! The client library: a connection to the cluster that retries on another member, a
//! session (a lease kept alive in the background), and the lock recipe's driver.

pub mod election;
mod lock;
pub mod redlock;
mod session;
pub mod zk;
mod zk_lock;
pub mod zk_session;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::net::Endpoint;

use crate::clock::{Clock, LocalTime};
use crate::rpc::{ClientReply, ClientRequest, WatchBatch, WatchOptions};
use crate::store::{
    Command, CommandResponse, KeyRange, LeaseId, RangeRequest, RangeResponse, Revision, StoreError, TxnRequest,
    TxnResponse,
};

pub use lock::{EtcdLockConfig, LockError, lock, lock_api, unlock, unlock_api};
pub use session::{ClientDeadline, Session, SessionEnd};
pub use zk_lock::{lock_zk, unlock_zk, zk_leader};

/// How long one RPC may take before the client tries another server.
pub(crate) const RPC_TIMEOUT: Duration = Duration::from_millis(500);
/// Pause before retrying when no server knows a leader (an election is likely under way).
const RETRY_BACKOFF: Duration = Duration::from_millis(20);

/// The request did not get an answer within its budget: for a write, the outcome is unknown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no server answered within {budget_ms} ms ({attempts} attempts, last: {last})")]
pub struct Unavailable {
    pub budget_ms: u64,
    pub attempts: u32,
    pub last: String,
}

/// When [`Client::call_retrying`] sends a request again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retry {
    /// After every failed attempt, until the budget is spent.
    Always,
    /// Only after a redirect: never after an attempt that may have taken effect.
    UnlessAmbiguous,
}

/// A connection to the cluster, pinned to one member at a time: the first it is given, then
/// the one a redirect names, the next when that one does not answer (clientv3 3.3 pinned one
/// endpoint this way). Every member serves it: a follower goes through the leader
/// (`crate::server::forward`). Cloning shares the pinned member.
///
/// etcd-client and clientv3 3.4 instead send each request to any member (a balanced channel);
/// that client is built and measured on the `wip/balanced-client` branch and waits for a
/// re-fit of the loopback profiles (docs/time.md).
#[derive(Clone)]
pub struct Client {
    endpoint: Endpoint,
    /// (server id, address), in id order.
    servers: Arc<Vec<(u64, SocketAddr)>>,
    /// Index into `servers` of the server to try first.
    target: Arc<Mutex<usize>>,
    clock: Clock,
}

impl Client {
    pub async fn connect(local: SocketAddr, servers: Vec<(u64, SocketAddr)>, clock: Clock) -> std::io::Result<Client> {
        assert!(!servers.is_empty(), "a client needs at least one server");
        let endpoint = Endpoint::bind(local).await?;
        Ok(Client { endpoint, servers: Arc::new(servers), target: Arc::new(Mutex::new(0)), clock })
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends `request` to the pinned member, following redirects and trying each server in turn
    /// until one answers or `budget` of local time is spent.
    pub async fn call(&self, request: ClientRequest, budget: Duration) -> Result<ClientReply, Unavailable> {
        self.call_with(request, RPC_TIMEOUT, budget).await
    }

    /// [`Client::call`] with another per-attempt timeout, for requests that block on the server
    /// (the Lock service).
    pub async fn call_with(
        &self,
        request: ClientRequest,
        attempt_timeout: Duration,
        budget: Duration,
    ) -> Result<ClientReply, Unavailable> {
        self.call_retrying(request, attempt_timeout, budget, Retry::Always).await
    }

    async fn call_retrying(
        &self,
        request: ClientRequest,
        attempt_timeout: Duration,
        budget: Duration,
        retry: Retry,
    ) -> Result<ClientReply, Unavailable> {
        let deadline = self.clock.now().plus_ms(budget.as_millis() as u64);
        let mut attempts = 0;
        let mut last = String::from("no attempt");
        while attempts == 0 || self.clock.now() < deadline {
            attempts += 1;
            let index = *self.target.lock().expect("client lock poisoned");
            let (_, addr) = self.servers[index];
            let timeout = attempt_timeout.min(remaining(self.clock.now(), deadline)).max(Duration::from_millis(1));
            match self.endpoint.call(addr, request.clone(), timeout).await {
                Ok(ClientReply::NotLeader { leader: Some(leader) }) if self.index_of(leader) != Some(index) => {
                    last = format!("redirected to s{leader}");
                    self.set_target(self.index_of(leader).unwrap_or(index));
                }
                Ok(ClientReply::NotLeader { .. }) => {
                    last = "no leader known".into();
                    self.next_target(index);
                    self.clock.sleep(RETRY_BACKOFF).await;
                }
                Ok(ClientReply::Unavailable { reason }) => {
                    last = reason;
                    self.next_target(index);
                    if retry == Retry::UnlessAmbiguous {
                        // The leader may have appended the write before it failed: it may still
                        // commit.
                        return Err(Unavailable { budget_ms: budget.as_millis() as u64, attempts, last });
                    }
                    self.clock.sleep(RETRY_BACKOFF).await;
                }
                Ok(reply) => return Ok(reply),
                Err(error) => {
                    last = error.to_string();
                    self.next_target(index);
                    if retry == Retry::UnlessAmbiguous {
                        // The request or its reply was lost: the write may have been applied.
                        return Err(Unavailable { budget_ms: budget.as_millis() as u64, attempts, last });
                    }
                }
            }
        }
        Err(Unavailable { budget_ms: budget.as_millis() as u64, attempts, last })
    }

    /// A write sent at most once to a server that may apply it: redirects from followers are
    /// followed, but after an attempt whose outcome is unknown (no reply in time, or a leader that
    /// failed after it may have appended the write) the write is not sent again and the error
    /// says its outcome is unknown. Retrying there could apply it twice, and the caller would
    /// report the second attempt's answer for the first's effect (a delete that says it deleted
    /// nothing, a compare-and-swap that says it did not swap): etcd's client does not retry
    /// mutations after such errors either.
    pub async fn write_once(&self, command: Command, budget: Duration) -> Result<CommandResponse, Unavailable> {
        let reply =
            self.call_retrying(ClientRequest::Write(command), RPC_TIMEOUT, budget, Retry::UnlessAmbiguous).await?;
        Ok(reply.into_write())
    }

    pub async fn write(&self, command: Command, budget: Duration) -> Result<CommandResponse, Unavailable> {
        Ok(self.call(ClientRequest::Write(command), budget).await?.into_write())
    }

    /// A txn: its response, or the store's refusal.
    pub async fn txn(&self, txn: TxnRequest, budget: Duration) -> Result<Result<TxnResponse, StoreError>, Unavailable> {
        Ok(crate::rpc::txn_reply(self.write(Command::Txn(txn), budget).await?))
    }

    /// A linearizable read.
    pub async fn range(
        &self,
        request: RangeRequest,
        budget: Duration,
    ) -> Result<Result<RangeResponse, StoreError>, Unavailable> {
        Ok(self.call(ClientRequest::Range { request, linearizable: true }, budget).await?.into_range())
    }

    /// A read sent to a server picked at random, as etcd's client balances requests over its
    /// endpoints: linearizable (through the leader's read index; a server that cannot serve it
    /// redirects to the leader) or serializable (from that server's applied state).
    pub async fn range_any(
        &self,
        request: RangeRequest,
        linearizable: bool,
        budget: Duration,
    ) -> Result<Result<RangeResponse, StoreError>, Unavailable> {
        use madsim::rand::Rng as _;
        let first = madsim::rand::thread_rng().gen_range(0..self.servers.len());
        let (_, addr) = self.servers[first];
        let request = ClientRequest::Range { request, linearizable };
        if let Ok(ClientReply::Range(result)) = self.endpoint.call(addr, request.clone(), RPC_TIMEOUT).await {
            return Ok(result);
        }
        Ok(self.call(request, budget).await?.into_range())
    }

    /// One long-poll for changes to `range` from revision `from`.
    pub async fn watch_once(
        &self,
        range: KeyRange,
        from: Revision,
        wait: Duration,
    ) -> Result<Result<WatchBatch, StoreError>, Unavailable> {
        self.watch_with(range, from, wait, WatchOptions::default()).await
    }

    /// [`Client::watch_once`] with etcd's watch options (prev_kv, no_put, no_delete).
    pub async fn watch_with(
        &self,
        range: KeyRange,
        from: Revision,
        wait: Duration,
        options: WatchOptions,
    ) -> Result<Result<WatchBatch, StoreError>, Unavailable> {
        let request = ClientRequest::Watch { range, from, wait_ms: wait.as_millis() as u64, options };
        // The poll itself waits `wait` on the server: each attempt has room for that (an
        // attempt cut at RPC_TIMEOUT gave up on every quiet poll just before its empty answer,
        // which then sat unread in the endpoint's mailbox, and polled again), the call for
        // that and a retry.
        Ok(self.call_with(request, wait + RPC_TIMEOUT, wait + RPC_TIMEOUT * 2).await?.into_watch())
    }

    /// etcd LeaseTimeToLive: `LeaseTtl` or `LeaseNotFound`.
    pub async fn time_to_live(&self, lease: LeaseId, keys: bool, budget: Duration) -> Result<ClientReply, Unavailable> {
        self.call(ClientRequest::LeaseTimeToLive { lease, keys }, budget).await
    }

    /// etcd LeaseLeases: every lease ID.
    pub async fn leases(&self, budget: Duration) -> Result<Vec<LeaseId>, Unavailable> {
        Ok(self.call(ClientRequest::LeaseLeases, budget).await?.into_leases())
    }

    pub async fn keep_alive(&self, lease: LeaseId, budget: Duration) -> Result<ClientReply, Unavailable> {
        self.call(ClientRequest::KeepAlive { lease }, budget).await
    }

    fn index_of(&self, id: u64) -> Option<usize> {
        self.servers.iter().position(|(server, _)| *server == id)
    }

    fn set_target(&self, index: usize) {
        *self.target.lock().expect("client lock poisoned") = index;
    }

    fn next_target(&self, failed: usize) {
        let mut target = self.target.lock().expect("client lock poisoned");
        // Another task may already have moved on from the failed server.
        if *target == failed {
            *target = (failed + 1) % self.servers.len();
        }
    }
}

fn remaining(now: LocalTime, deadline: LocalTime) -> Duration {
    now.until(deadline)
}

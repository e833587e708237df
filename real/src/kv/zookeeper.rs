//! The key-value workload's operations on a real ZooKeeper server, through zookeeper-client, as
//! the simulator's ZooKeeper workload does them (sim/src/kv_workload/zookeeper.rs): each key is a
//! persistent znode, a put is `setData` with any version, a read is `getData` from the one server
//! the client talks to (after a `sync` with `zk_reads = "sync"`), a compare-and-swap a `create`
//! (from absent) or a `setData` with the version seen.
//!
//! Client cN talks to server ((N-1) mod servers) and moves on to the next only when a request
//! to it goes unanswered, as each simulated client does (zookeeper-client would shuffle a list
//! of servers, so it is given one at a time): a follower cut off from its leader serves its
//! readers from its own tree until it drops them.
//!
//! Revisions: a write records the zxid of the change it made (its stat's `mzxid`); a read the
//! `mzxid` of the znode it read (0 when absent): the zxid the server had reached when it answered
//! is in the reply's header, which zookeeper-client does not hand out. The checkers order writes
//! by their revisions and judge reads by their values.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use coordsim_sim::clock::LocalTime;
use coordsim_sim::kv_workload::{Guard, KEY_PREFIX, KvConnection, Seen, Step};
use coordsim_sim::scenario::ZkReads;
use zookeeper_client as zk;

use super::{LocalClock, OP_BUDGET, Outcome, Unanswered};
use crate::journal::Journal;

/// The session timeout of a workload client: its znodes are persistent, so the session only
/// keeps the connection.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// One client's connection to one real ZooKeeper server.
pub(super) struct ZkKv {
    /// `host:port` of every server, and the index of the one the client talks to.
    servers: Vec<String>,
    current: std::cell::Cell<usize>,
    reads: ZkReads,
    journal: Arc<Journal>,
    clock: LocalClock,
    /// The session, once connected; dropped when it expires or closes, and opened again.
    client: RefCell<Option<zk::Client>>,
}

impl ZkKv {
    pub(super) fn new(
        servers: Vec<String>,
        first: usize,
        reads: ZkReads,
        journal: Arc<Journal>,
        clock: LocalClock,
    ) -> ZkKv {
        let current = std::cell::Cell::new(first % servers.len().max(1));
        ZkKv { servers, current, reads, journal, clock, client: RefCell::new(None) }
    }

    /// Gives up the session and the server: the next operation connects to the next server.
    fn move_on(&self) {
        *self.client.borrow_mut() = None;
        self.current.set((self.current.get() + 1) % self.servers.len());
    }

    /// The open session, connecting first if there is none (within the operation's budget).
    async fn client(&self) -> Result<zk::Client, String> {
        if let Some(client) = self.client.borrow().as_ref() {
            return Ok(client.clone());
        }
        let server = &self.servers[self.current.get()];
        let connect = zk::Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(server);
        let failed = match tokio::time::timeout(OP_BUDGET, connect).await {
            Ok(Ok(client)) => {
                *self.client.borrow_mut() = Some(client.clone());
                return Ok(client);
            }
            Ok(Err(error)) => format!("cannot connect to {server}: {error}"),
            Err(_) => format!("cannot connect to {server} within {} ms", OP_BUDGET.as_millis()),
        };
        self.move_on();
        Err(failed)
    }

    /// Runs `request` on the session within the budget. Unanswered, the client moves on to the
    /// next server.
    async fn call<T, F>(&self, request: impl FnOnce(zk::Client) -> F) -> Outcome<Result<T, zk::Error>>
    where
        F: Future<Output = Result<T, zk::Error>>,
    {
        let client = match self.client().await {
            Ok(client) => client,
            // Nothing was sent: certainly not applied.
            Err(error) => return Outcome::Refused(error),
        };
        let unanswered = match tokio::time::timeout(OP_BUDGET, request(client)).await {
            Ok(Err(
                error @ (zk::Error::SessionExpired
                | zk::Error::ClientClosed
                | zk::Error::ConnectionLoss
                | zk::Error::Timeout),
            )) => error.to_string(),
            Ok(answer) => return Outcome::Answered(answer),
            Err(_) => format!("no answer within {} ms", OP_BUDGET.as_millis()),
        };
        self.move_on();
        Outcome::Unanswered(unanswered)
    }
}

/// Turns a server's error answer into a refusal (it checked the request and did not apply it).
fn refused<T>(outcome: Outcome<Result<T, zk::Error>>) -> Outcome<T> {
    match outcome {
        Outcome::Answered(Ok(answer)) => Outcome::Answered(answer),
        Outcome::Answered(Err(error)) => Outcome::Refused(error.to_string()),
        Outcome::Refused(error) => Outcome::Refused(error),
        Outcome::Unanswered(error) => Outcome::Unanswered(error),
    }
}

impl KvConnection for ZkKv {
    fn key(&self, i: usize) -> String {
        format!("/{KEY_PREFIX}{i}")
    }

    fn last_seen_guard(&self, seen: Option<&Seen>) -> Guard {
        seen.map_or(Guard::Absent, Guard::on_version)
    }

    fn creates_keys_first(&self) -> bool {
        true
    }

    fn compacts(&self) -> bool {
        false
    }

    fn now(&self) -> LocalTime {
        self.clock.now()
    }

    fn random<T>(&self, draw: impl FnOnce(&mut dyn rand08::RngCore) -> T) -> T {
        draw(&mut rand08::thread_rng())
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn put(&self, node: &str, path: &str, value: String) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Put { key: path.to_string(), value: value.clone() });
        // A znode that does not exist yet is not created: the put certainly did not happen.
        let data = value.clone();
        let outcome =
            refused(self.call(|client| async move { client.set_data(path, data.as_bytes(), None).await }).await);
        super::finish(&self.journal, node, op, outcome, Unanswered::MayHaveApplied, |stat| {
            let seen = Seen { value: Some(value), version: i64::from(stat.version) };
            (Return::Put { revision: stat.mzxid }, Step::learned(stat.mzxid, seen))
        })
    }

    async fn get(&self, node: &str, path: &str) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Get { key: path.to_string() });
        let sync = self.reads == ZkReads::Sync;
        let outcome = self
            .call(|client| async move {
                if sync {
                    client.sync(path).await?;
                }
                match client.get_data(path).await {
                    Ok((data, stat)) => Ok(Some((data, stat))),
                    Err(zk::Error::NoNode) => Ok(None),
                    Err(error) => Err(error),
                }
            })
            .await;
        super::finish(&self.journal, node, op, refused(outcome), Unanswered::DidNotHappen, |read| {
            let value = read.as_ref().map(|(data, _)| String::from_utf8_lossy(data).into_owned());
            let (revision, version) = read.map_or((0, -1), |(_, stat)| (stat.mzxid, i64::from(stat.version)));
            (Return::Got { value: value.clone(), revision }, Step::learned(revision, Seen { value, version }))
        })
    }

    async fn delete(&self, _: &str, _: &str) -> Option<Step> {
        unreachable!("a validated ZooKeeper workload has no deletes")
    }

    async fn cas(&self, node: &str, path: &str, guard: Guard, new: String) -> Option<Step> {
        let call =
            Call::Cas { key: path.to_string(), expected: guard.expected().map(str::to_string), new: new.clone() };
        let op = self.journal.invoke(node, call);
        let data = new.clone();
        let outcome = self
            .call(|client| async move {
                match guard {
                    Guard::Absent => {
                        let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                        client.create(path, data.as_bytes(), &options).await.map(|(stat, _)| stat)
                    }
                    Guard::Version { version, .. } => {
                        client.set_data(path, data.as_bytes(), Some(version as i32)).await
                    }
                    Guard::Value(_) => unreachable!("ZooKeeper compares versions, never values"),
                }
            })
            .await;
        // The znode was not as the guard expected: a cas that did not swap, and nothing changed.
        // Its answer carries no zxid here (see the module's docs): recorded as 0.
        let outcome = match outcome {
            Outcome::Answered(Err(zk::Error::NodeExists | zk::Error::BadVersion | zk::Error::NoNode)) => {
                Outcome::Answered(None)
            }
            other => refused(other).map(Some),
        };
        super::finish(&self.journal, node, op, outcome, Unanswered::MayHaveApplied, |stat| match stat {
            Some(stat) => {
                let seen = Seen { value: Some(new), version: i64::from(stat.version) };
                (Return::Cas { swapped: true, revision: stat.mzxid }, Step::learned(stat.mzxid, seen))
            }
            None => (Return::Cas { swapped: false, revision: 0 }, Step::conflict(0)),
        })
    }

    async fn compact(&self, _: i64) {}
}

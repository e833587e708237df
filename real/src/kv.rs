//! The key-value workload on a real cluster: the simulator's writer and reader loops
//! (sim/src/kv_workload), each operation sent to real etcd through etcd-client and recorded in
//! the client's journal as the simulator records it, with the revision etcd's response header
//! carries.
//!
//! What counts as unknown: a write without an answer within [`OP_BUDGET`], or answered by a
//! transport error, may have been applied (`info`); a read without an answer changed nothing
//! (`fail`). A read is linearizable (etcd's default, through the leader's read index) or, with
//! `[kv] etcd_reads = "serializable"`, served from the applied state of whichever member the
//! client's connection picks.

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use coordsim_sim::clock::LocalTime;
use coordsim_sim::kv_workload::{Guard, KEY_PREFIX, KvConnection, KvRole, Seen, Step, run_reader, run_writer};
use coordsim_sim::scenario::EtcdReads;
use etcd_client as etcd;

use crate::config::{ClientConfig, KvConfig};
use crate::journal::Journal;

/// How long one operation may take before its outcome counts as unknown (the simulator's).
const OP_BUDGET: Duration = Duration::from_secs(1);

/// Runs the client's part of the key-value workload until the process is stopped.
pub async fn run(config: &ClientConfig, kv: &KvConfig, journal: Arc<Journal>) -> Result<(), String> {
    crate::workload::sleep_until(&journal, config.start_ns).await;
    let client = crate::etcd::connect(&config.endpoints, OP_BUDGET).await?;
    let serializable = kv.spec.etcd_reads() == EtcdReads::Serializable;
    let conn = EtcdKv { client, serializable, journal, epoch: tokio::time::Instant::now() };
    match kv.role {
        KvRole::Reader => run_reader(&config.name, &kv.spec, &conn).await,
        KvRole::Writer | KvRole::WriterAndCompactor => run_writer(&config.name, kv.role, &kv.spec, &conn).await,
        KvRole::Watcher => return Err("watchers of the key-value workload run only in the simulator so far".into()),
    }
    Ok(())
}

/// One client's connection to a real etcd cluster.
struct EtcdKv {
    client: etcd::Client,
    /// Reads with etcd's `serializable` option (`[kv] etcd_reads`).
    serializable: bool,
    journal: Arc<Journal>,
    /// The start of the client's local time: the process's own monotonic clock (which a
    /// `[[clock]]` skews through libfaketime).
    epoch: tokio::time::Instant,
}

/// The outcome of one request: answered, refused by the server, or unanswered.
enum Outcome<T> {
    Answered(T),
    Refused(String),
    Unanswered(String),
}

impl EtcdKv {
    async fn call<T>(&self, request: impl Future<Output = Result<T, etcd::Error>>) -> Outcome<T> {
        match tokio::time::timeout(OP_BUDGET, request).await {
            Ok(Ok(answer)) => Outcome::Answered(answer),
            // A gRPC status from a server is its answer; a transport error left the outcome open.
            Ok(Err(etcd::Error::GRpcStatus(status))) if is_refusal(&status) => {
                Outcome::Refused(status.message().to_string())
            }
            Ok(Err(error)) => Outcome::Unanswered(error.to_string()),
            Err(_) => Outcome::Unanswered(format!("no answer within {} ms", OP_BUDGET.as_millis())),
        }
    }

    /// Records a write's outcome: `ok` with what `answered` makes of the answer, `fail` when
    /// the server refused it, `info` when it may have been applied.
    fn finish_write<T>(
        &self,
        node: &str,
        op: u64,
        outcome: Outcome<T>,
        answered: impl FnOnce(T) -> (Return, Step),
    ) -> Option<Step> {
        match outcome {
            Outcome::Answered(answer) => {
                let (ret, step) = answered(answer);
                self.journal.ok(node, op, ret);
                Some(step)
            }
            Outcome::Refused(error) => {
                self.journal.fail(node, op, error);
                None
            }
            Outcome::Unanswered(error) => {
                self.journal.info(node, op, error);
                None
            }
        }
    }
}

/// A status that says the request was not applied: the server checked it and turned it down
/// (a bad argument, a compacted revision, too many requests). Unavailable, deadline exceeded,
/// canceled and unknown statuses may follow an apply.
fn is_refusal(status: &tonic::Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition | Code::ResourceExhausted | Code::NotFound
    )
}

fn revision_of(header: Option<&etcd::ResponseHeader>) -> i64 {
    header.map_or(0, |h| h.revision())
}

impl KvConnection for EtcdKv {
    fn key(&self, i: usize) -> String {
        format!("{KEY_PREFIX}{i}")
    }

    fn last_seen_guard(&self, seen: Option<&Seen>) -> Guard {
        seen.and_then(|seen| seen.value.clone()).map_or(Guard::Absent, Guard::Value)
    }

    fn creates_keys_first(&self) -> bool {
        false
    }

    fn compacts(&self) -> bool {
        true
    }

    fn now(&self) -> LocalTime {
        LocalTime(self.epoch.elapsed().as_nanos().min(i64::MAX as u128) as i64)
    }

    fn random<T>(&self, draw: impl FnOnce(&mut dyn rand08::RngCore) -> T) -> T {
        draw(&mut rand08::thread_rng())
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn put(&self, node: &str, key: &str, value: String) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Put { key: key.to_string(), value: value.clone() });
        let outcome = self.call(self.client.clone().put(key, value.clone(), None)).await;
        self.finish_write(node, op, outcome, |response| {
            let revision = revision_of(response.header());
            (Return::Put { revision }, Step::learned(revision, Seen { value: Some(value), version: revision }))
        })
    }

    async fn get(&self, node: &str, key: &str) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Get { key: key.to_string() });
        let options = self.serializable.then(|| etcd::GetOptions::new().with_serializable());
        match self.call(self.client.clone().get(key, options)).await {
            Outcome::Answered(response) => {
                let kv = response.kvs().first();
                let value = kv.map(|kv| String::from_utf8_lossy(kv.value()).into_owned());
                let revision = revision_of(response.header());
                self.journal.ok(node, op, Return::Got { value: value.clone(), revision });
                // An absent key's mod_revision reads as 0 in a compare.
                Some(Step::learned(revision, Seen { value, version: kv.map_or(0, |kv| kv.mod_revision()) }))
            }
            // A read changes nothing: without an answer it did not happen for anyone.
            Outcome::Refused(error) | Outcome::Unanswered(error) => {
                self.journal.fail(node, op, error);
                None
            }
        }
    }

    async fn delete(&self, node: &str, key: &str) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Delete { key: key.to_string() });
        let outcome = self.call(self.client.clone().delete(key, None)).await;
        self.finish_write(node, op, outcome, |response| {
            let revision = revision_of(response.header());
            let ret = Return::Deleted { count: response.deleted().max(0) as u64, revision };
            (ret, Step::learned(revision, Seen { value: None, version: 0 }))
        })
    }

    async fn cas(&self, node: &str, key: &str, guard: Guard, new: String) -> Option<Step> {
        let call = Call::Cas { key: key.to_string(), expected: guard.expected().map(str::to_string), new: new.clone() };
        let op = self.journal.invoke(node, call);
        let compare = match guard {
            Guard::Absent => etcd::Compare::create_revision(key, etcd::CompareOp::Equal, 0),
            Guard::Value(value) => etcd::Compare::value(key, etcd::CompareOp::Equal, value),
            Guard::Version { version, .. } => etcd::Compare::mod_revision(key, etcd::CompareOp::Equal, version),
        };
        let txn = etcd::Txn::new().when([compare]).and_then([etcd::TxnOp::put(key, new.clone(), None)]);
        let outcome = self.call(self.client.clone().txn(txn)).await;
        self.finish_write(node, op, outcome, |response| {
            let (swapped, revision) = (response.succeeded(), revision_of(response.header()));
            let step = match swapped {
                true => Step::learned(revision, Seen { value: Some(new), version: revision }),
                false => Step::conflict(revision),
            };
            (Return::Cas { swapped, revision }, step)
        })
    }

    async fn compact(&self, revision: i64) {
        // Revision 0 (nothing written yet) or one already compacted: etcd refuses, nothing changes.
        let _ = tokio::time::timeout(OP_BUDGET, self.client.clone().compact(revision, None)).await;
    }
}

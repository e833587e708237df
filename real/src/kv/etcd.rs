//! The key-value workload's operations on real etcd, through etcd-client, each recorded with
//! the revision of etcd's response header. A read is linearizable (etcd's default, through the
//! leader's read index) or, with `[kv] etcd_reads = "serializable"`, served from the applied
//! state of whichever member the client's connection picks.

use std::sync::Arc;
use std::time::Duration;

use coordsim_checker::history::{Call, Return};
use coordsim_sim::clock::LocalTime;
use coordsim_sim::kv_workload::{Guard, KEY_PREFIX, KvConnection, Seen, Step};
use etcd_client as etcd;

use super::{LocalClock, OP_BUDGET, Outcome, Unanswered};
use crate::journal::Journal;

/// One client's connection to a real etcd cluster.
pub(super) struct EtcdKv {
    pub(super) client: etcd::Client,
    /// Reads with etcd's `serializable` option (`[kv] etcd_reads`).
    pub(super) serializable: bool,
    pub(super) journal: Arc<Journal>,
    pub(super) clock: LocalClock,
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
        self.clock.now()
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
        super::finish(&self.journal, node, op, outcome, Unanswered::MayHaveApplied, |response| {
            let revision = revision_of(response.header());
            (Return::Put { revision }, Step::learned(revision, Seen { value: Some(value), version: revision }))
        })
    }

    async fn get(&self, node: &str, key: &str) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Get { key: key.to_string() });
        let options = self.serializable.then(|| etcd::GetOptions::new().with_serializable());
        let outcome = self.call(self.client.clone().get(key, options)).await;
        super::finish(&self.journal, node, op, outcome, Unanswered::DidNotHappen, |response| {
            let kv = response.kvs().first();
            let value = kv.map(|kv| String::from_utf8_lossy(kv.value()).into_owned());
            let revision = revision_of(response.header());
            // An absent key's mod_revision reads as 0 in a compare.
            let version = kv.map_or(0, |kv| kv.mod_revision());
            (Return::Got { value: value.clone(), revision }, Step::learned(revision, Seen { value, version }))
        })
    }

    async fn delete(&self, node: &str, key: &str) -> Option<Step> {
        let op = self.journal.invoke(node, Call::Delete { key: key.to_string() });
        let outcome = self.call(self.client.clone().delete(key, None)).await;
        super::finish(&self.journal, node, op, outcome, Unanswered::MayHaveApplied, |response| {
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
        super::finish(&self.journal, node, op, outcome, Unanswered::MayHaveApplied, |response| {
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

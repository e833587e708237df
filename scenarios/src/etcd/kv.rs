//! The KV service: etcd-client's `KvClient`, its options, responses and transactions, on the
//! simulated store (`coordsim_sim::store`), recorded into the history.

use coordsim_checker::history::{Call, Return, Touched};
use coordsim_sim::store::{self, Command, CommandResponse, KeyRange};

use super::error::{Error, Result, from_store, from_unavailable};
use super::{Conn, text};

/// etcd's response header. The simulated store keeps one revision counter; `cluster_id` and
/// `member_id` are fixed stand-ins and `raft_term` is 0 (the simulated servers do not say).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHeader {
    revision: i64,
}

impl ResponseHeader {
    pub(crate) fn new(revision: i64) -> ResponseHeader {
        ResponseHeader { revision }
    }

    /// The cluster's id: always 1 in the simulator.
    pub fn cluster_id(&self) -> u64 {
        1
    }

    /// The answering member's id: not tracked per response in the simulator (0).
    pub fn member_id(&self) -> u64 {
        0
    }

    /// The store's revision when the request was served.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// The Raft term of the answer: not tracked per response in the simulator (0); `status` gives it.
    pub fn raft_term(&self) -> u64 {
        0
    }
}

/// One key-value (etcd mvccpb.KeyValue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue(pub(crate) store::KeyValue);

impl KeyValue {
    /// The key's bytes.
    pub fn key(&self) -> &[u8] {
        self.0.key.as_bytes()
    }

    /// The key as text (always UTF-8 in the simulated store).
    pub fn key_str(&self) -> Result<&str> {
        Ok(&self.0.key)
    }

    /// The value's bytes.
    pub fn value(&self) -> &[u8] {
        self.0.value.as_bytes()
    }

    /// The value as text (always UTF-8 in the simulated store).
    pub fn value_str(&self) -> Result<&str> {
        Ok(&self.0.value)
    }

    /// The key and the value, as bytes.
    pub fn into_key_value(self) -> (Vec<u8>, Vec<u8>) {
        (self.0.key.into_bytes(), self.0.value.into_bytes())
    }

    /// The revision of the put that created this generation of the key.
    pub fn create_revision(&self) -> i64 {
        self.0.create_revision
    }

    /// The revision of the last put to the key.
    pub fn mod_revision(&self) -> i64 {
        self.0.mod_revision
    }

    /// Puts since the key was created (1 after the creating put).
    pub fn version(&self) -> i64 {
        self.0.version
    }

    /// The lease the key is attached to, 0 for none.
    pub fn lease(&self) -> i64 {
        self.0.lease
    }
}

/// etcd-client's four ways to widen a request from its key to a range, for an options type
/// with an `end: RangeEnd` field (GetOptions, DeleteOptions, WatchOptions).
macro_rules! range_end_builders {
    () => {
        /// Keys in `[key, end_key)`.
        pub fn with_range(mut self, end_key: impl Into<Vec<u8>>) -> Self {
            self.end = $crate::etcd::kv::RangeEnd::End(end_key.into());
            self
        }

        /// Every key `>= key`.
        pub fn with_from_key(mut self) -> Self {
            self.end = $crate::etcd::kv::RangeEnd::FromKey;
            self
        }

        /// Every key that starts with `key`.
        pub fn with_prefix(mut self) -> Self {
            self.end = $crate::etcd::kv::RangeEnd::Prefix;
            self
        }

        /// Every key.
        pub fn with_all_keys(mut self) -> Self {
            self.end = $crate::etcd::kv::RangeEnd::AllKeys;
            self
        }
    };
}
pub(crate) use range_end_builders;

/// Which keys a request covers besides its key (etcd's range_end), as etcd-client's options set it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum RangeEnd {
    #[default]
    Key,
    End(Vec<u8>),
    FromKey,
    Prefix,
    AllKeys,
}

impl RangeEnd {
    /// The simulated store's range for `key` and this end; keys must be UTF-8.
    pub(crate) fn range(&self, key: Vec<u8>) -> Result<KeyRange> {
        let key = text(key, "key")?;
        Ok(match self {
            RangeEnd::Key => KeyRange::Key(key),
            RangeEnd::Prefix if key.is_empty() => KeyRange::Prefix(String::new()),
            RangeEnd::Prefix => KeyRange::Prefix(key),
            RangeEnd::AllKeys => KeyRange::Prefix(String::new()),
            RangeEnd::FromKey if key.is_empty() || key == "\0" => KeyRange::Prefix(String::new()),
            RangeEnd::FromKey => KeyRange::FromKey(key),
            RangeEnd::End(end) if end.as_slice() == b"\0" => KeyRange::FromKey(key),
            RangeEnd::End(end) if prefix_end(key.as_bytes()) == *end => KeyRange::Prefix(key),
            RangeEnd::End(end) => KeyRange::Range { start: key, end: text(end.clone(), "range_end")? },
        })
    }
}

/// etcd's range_end for a prefix: the key with its last byte below 0xff raised by one.
fn prefix_end(key: &[u8]) -> Vec<u8> {
    let mut end = key.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// What a range may change, for the history: a key, or the longest prefix that covers it.
pub(crate) fn touched(range: &KeyRange) -> Touched {
    match range {
        KeyRange::Key(key) => Touched::Key(key.clone()),
        KeyRange::Prefix(prefix) => Touched::Prefix(prefix.clone()),
        KeyRange::FromKey(_) => Touched::Prefix(String::new()),
        KeyRange::Range { start, end } => {
            let common = start.chars().zip(end.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect();
            Touched::Prefix(common)
        }
    }
}

fn describe_range(range: &KeyRange) -> String {
    match range {
        KeyRange::Key(key) => key.clone(),
        KeyRange::Prefix(prefix) => format!("{prefix}*"),
        KeyRange::FromKey(key) => format!(">={key}"),
        KeyRange::Range { start, end } => format!("[{start}, {end})"),
    }
}

/// Options of `put` (etcd PutRequest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PutOptions {
    lease: i64,
    prev_kv: bool,
    ignore_value: bool,
    ignore_lease: bool,
}

impl PutOptions {
    /// No options: no lease, no previous value.
    pub const fn new() -> Self {
        PutOptions { lease: 0, prev_kv: false, ignore_value: false, ignore_lease: false }
    }

    /// Attach the key to lease `lease` (it must exist).
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }

    /// Return the previous key-value.
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// Keep the key's value (not simulated: the call fails with `InvalidArgs`).
    pub const fn with_ignore_value(mut self) -> Self {
        self.ignore_value = true;
        self
    }

    /// Keep the key's current lease (the key must exist).
    pub const fn with_ignore_lease(mut self) -> Self {
        self.ignore_lease = true;
        self
    }
}

/// What `put` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutResponse {
    header: ResponseHeader,
    prev_kv: Option<KeyValue>,
}

impl PutResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The key's previous value, with `with_prev_key`; `None` if it did not exist.
    pub fn prev_key(&self) -> Option<&KeyValue> {
        self.prev_kv.as_ref()
    }

    /// Takes the previous value out of the response.
    pub fn take_prev_key(&mut self) -> Option<KeyValue> {
        self.prev_kv.take()
    }
}

/// etcd's sort target (RangeRequest.SortTarget).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortTarget {
    Key,
    Version,
    Create,
    Mod,
    Value,
}

/// etcd's sort order (RangeRequest.SortOrder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    None,
    Ascend,
    Descend,
}

/// Options of `get` (etcd RangeRequest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    pub(crate) end: RangeEnd,
    limit: i64,
    revision: i64,
    sort: Option<(SortTarget, SortOrder)>,
    serializable: bool,
    keys_only: bool,
    count_only: bool,
    min_create_revision: i64,
    max_create_revision: i64,
    mod_revision_bounds: bool,
}

impl GetOptions {
    /// No options: the one key, at the current revision, linearizable.
    pub const fn new() -> Self {
        GetOptions {
            end: RangeEnd::Key,
            limit: 0,
            revision: 0,
            sort: None,
            serializable: false,
            keys_only: false,
            count_only: false,
            min_create_revision: 0,
            max_create_revision: 0,
            mod_revision_bounds: false,
        }
    }

    range_end_builders!();

    /// At most `limit` keys (0: no limit); `count` still counts every match.
    pub const fn with_limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// Read at `revision` (0: the current one); below the compaction point: `OutOfRange`.
    pub const fn with_revision(mut self, revision: i64) -> Self {
        self.revision = revision;
        self
    }

    /// Sorts the answer by `target` in `order` (etcd sorts after the range is read, before the limit).
    pub fn with_sort(mut self, target: SortTarget, order: SortOrder) -> Self {
        self.sort = Some((target, order));
        self
    }

    /// Served by whichever server the client reaches, from its own applied state: possibly
    /// stale (etcd's serializable read). Default: linearizable, through the leader's read index.
    pub const fn with_serializable(mut self) -> Self {
        self.serializable = true;
        self
    }

    /// Keys without values.
    pub const fn with_keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    /// Only the count of matching keys (`GetResponse::count`), no keys.
    pub const fn with_count_only(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// Not simulated: the call fails with `InvalidArgs`.
    pub const fn with_min_mod_revision(mut self, _revision: i64) -> Self {
        self.mod_revision_bounds = true;
        self
    }

    /// Not simulated: the call fails with `InvalidArgs`.
    pub const fn with_max_mod_revision(mut self, _revision: i64) -> Self {
        self.mod_revision_bounds = true;
        self
    }

    /// Only keys created at `revision` or later (0: no bound).
    pub const fn with_min_create_revision(mut self, revision: i64) -> Self {
        self.min_create_revision = revision;
        self
    }

    /// Only keys created at `revision` or earlier (0: no bound).
    pub const fn with_max_create_revision(mut self, revision: i64) -> Self {
        self.max_create_revision = revision;
        self
    }

    pub(crate) fn request(&self, key: Vec<u8>) -> Result<store::RangeRequest> {
        if self.mod_revision_bounds {
            return Err(Error::InvalidArgs("min/max mod_revision filters are not simulated".into()));
        }
        let mut request = store::RangeRequest::new(self.end.range(key)?);
        request.revision = self.revision;
        request.limit = usize::try_from(self.limit.max(0)).unwrap_or(usize::MAX);
        request.keys_only = self.keys_only;
        request.count_only = self.count_only;
        request.min_create_revision = self.min_create_revision;
        request.max_create_revision = self.max_create_revision;
        request.sort = match self.sort {
            None | Some((_, SortOrder::None)) => None,
            Some((target, order)) => Some((
                match target {
                    SortTarget::Key => store::SortTarget::Key,
                    SortTarget::Version => store::SortTarget::Version,
                    SortTarget::Create => store::SortTarget::CreateRevision,
                    SortTarget::Mod => store::SortTarget::ModRevision,
                    SortTarget::Value => store::SortTarget::Value,
                },
                if order == SortOrder::Descend { store::SortOrder::Descend } else { store::SortOrder::Ascend },
            )),
        };
        Ok(request)
    }
}

/// What `get` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetResponse {
    header: ResponseHeader,
    kvs: Vec<KeyValue>,
    count: i64,
    more: bool,
}

impl GetResponse {
    fn from_store(response: store::RangeResponse) -> GetResponse {
        GetResponse {
            header: ResponseHeader::new(response.header.revision),
            kvs: response.kvs.into_iter().map(KeyValue).collect(),
            count: response.count as i64,
            more: response.more,
        }
    }

    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The keys and values read, in key order unless sorted otherwise.
    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    /// Takes the keys and values out of the response.
    pub fn take_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.kvs)
    }

    /// Whether `limit` cut the result.
    pub fn more(&self) -> bool {
        self.more
    }

    /// Every matching key, before `limit`.
    pub fn count(&self) -> i64 {
        self.count
    }
}

/// Options of `delete` (etcd DeleteRangeRequest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    end: RangeEnd,
    prev_kv: bool,
}

impl DeleteOptions {
    /// No options: the one key, no previous values.
    pub const fn new() -> Self {
        DeleteOptions { end: RangeEnd::Key, prev_kv: false }
    }

    range_end_builders!();

    /// Answer the deleted keys' values (`DeleteResponse::prev_kvs`).
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }
}

/// What `delete` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteResponse {
    header: ResponseHeader,
    deleted: i64,
    prev_kvs: Vec<KeyValue>,
}

impl DeleteResponse {
    fn from_store(response: store::DeleteRangeResponse, prev_kv: bool) -> DeleteResponse {
        DeleteResponse {
            header: ResponseHeader::new(response.header.revision),
            deleted: response.deleted as i64,
            prev_kvs: if prev_kv { response.prev_kvs.into_iter().map(KeyValue).collect() } else { Vec::new() },
        }
    }

    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// How many keys the delete removed.
    pub fn deleted(&self) -> i64 {
        self.deleted
    }

    /// The deleted keys' values, with `with_prev_key`.
    pub fn prev_kvs(&self) -> &[KeyValue] {
        &self.prev_kvs
    }

    /// Takes the deleted keys' values out of the response.
    pub fn take_prev_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.prev_kvs)
    }
}

/// Options of `compact`. `physical` changes nothing in the simulated store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionOptions {
    physical: bool,
}

impl CompactionOptions {
    /// No options.
    pub const fn new() -> Self {
        CompactionOptions { physical: false }
    }

    /// Accepted; the simulated store compacts at once either way.
    pub const fn with_physical(mut self) -> Self {
        self.physical = true;
        self
    }
}

/// What `compact` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionResponse {
    header: ResponseHeader,
}

impl CompactionResponse {
    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// etcd's compare result (Compare.CompareResult).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Equal,
    Greater,
    Less,
    NotEqual,
}

/// One compare of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compare {
    key: Vec<u8>,
    op: CompareOp,
    target: CompareTarget,
    ranged: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum CompareTarget {
    Version(i64),
    CreateRevision(i64),
    ModRevision(i64),
    Value(Vec<u8>),
    Lease(i64),
}

impl Compare {
    fn new(key: impl Into<Vec<u8>>, op: CompareOp, target: CompareTarget) -> Self {
        Compare { key: key.into(), op, target, ranged: false }
    }

    /// The key's version (0: absent).
    pub fn version(key: impl Into<Vec<u8>>, cmp: CompareOp, version: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Version(version))
    }

    /// Compares `key`'s create revision (0 if absent) with `revision`.
    pub fn create_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::CreateRevision(revision))
    }

    /// Compares `key`'s last modification revision (0 if absent) with `revision`.
    pub fn mod_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::ModRevision(revision))
    }

    /// The key's value; false for an absent key, whatever the op (as etcd).
    pub fn value(key: impl Into<Vec<u8>>, cmp: CompareOp, value: impl Into<Vec<u8>>) -> Self {
        Compare::new(key, cmp, CompareTarget::Value(value.into()))
    }

    /// Compares the lease `key` is attached to (0: none) with `lease`.
    pub fn lease(key: impl Into<Vec<u8>>, cmp: CompareOp, lease: i64) -> Self {
        Compare::new(key, cmp, CompareTarget::Lease(lease))
    }

    /// Not simulated (a compare over a range): the txn fails with `InvalidArgs`.
    pub fn with_range(mut self, _end: impl Into<Vec<u8>>) -> Self {
        self.ranged = true;
        self
    }

    /// Not simulated (a compare over a prefix): the txn fails with `InvalidArgs`.
    pub fn with_prefix(mut self) -> Self {
        self.ranged = true;
        self
    }

    fn to_store(&self) -> Result<store::Compare> {
        if self.ranged {
            return Err(Error::InvalidArgs("compares over a range or prefix are not simulated".into()));
        }
        let result = match self.op {
            CompareOp::Equal => store::CompareResult::Equal,
            CompareOp::Greater => store::CompareResult::Greater,
            CompareOp::Less => store::CompareResult::Less,
            CompareOp::NotEqual => store::CompareResult::NotEqual,
        };
        let target = match &self.target {
            CompareTarget::Version(v) => store::CompareTarget::Version(*v),
            CompareTarget::CreateRevision(r) => store::CompareTarget::CreateRevision(*r),
            CompareTarget::ModRevision(r) => store::CompareTarget::ModRevision(*r),
            CompareTarget::Value(v) => store::CompareTarget::Value(text(v.clone(), "compare value")?),
            CompareTarget::Lease(l) => store::CompareTarget::Lease(*l),
        };
        Ok(store::Compare { key: text(self.key.clone(), "compare key")?, result, target })
    }
}

/// One operation of a transaction branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnOp(TxnOpKind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum TxnOpKind {
    Put(Vec<u8>, Vec<u8>, PutOptions),
    Get(Vec<u8>, GetOptions),
    Delete(Vec<u8>, DeleteOptions),
    Txn(Txn),
}

impl TxnOp {
    /// A put inside a transaction.
    pub fn put(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>, options: Option<PutOptions>) -> Self {
        TxnOp(TxnOpKind::Put(key.into(), value.into(), options.unwrap_or_default()))
    }

    /// A read inside a transaction (at the transaction's revision).
    pub fn get(key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Self {
        TxnOp(TxnOpKind::Get(key.into(), options.unwrap_or_default()))
    }

    /// A delete inside a transaction.
    pub fn delete(key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Self {
        TxnOp(TxnOpKind::Delete(key.into(), options.unwrap_or_default()))
    }

    /// A nested transaction (etcd 3.3+).
    pub fn txn(txn: Txn) -> Self {
        TxnOp(TxnOpKind::Txn(txn))
    }

    fn to_store(&self) -> Result<store::TxnOp> {
        Ok(match &self.0 {
            TxnOpKind::Put(key, value, options) => store::TxnOp::Put(put_request(key, value, options)?),
            TxnOpKind::Get(key, options) => store::TxnOp::Range(options.request(key.clone())?),
            TxnOpKind::Delete(key, options) => store::TxnOp::DeleteRange(store::DeleteRangeRequest {
                range: options.end.range(key.clone())?,
                // Always asked for: the response says which keys went, the user sees them only if asked.
                prev_kv: true,
            }),
            TxnOpKind::Txn(txn) => store::TxnOp::Txn(txn.to_store()?),
        })
    }
}

/// A transaction: if every compare holds, `and_then`'s operations run, else `or_else`'s; one
/// revision for all of its writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Txn {
    compare: Vec<Compare>,
    success: Vec<TxnOp>,
    failure: Vec<TxnOp>,
}

impl Txn {
    /// An empty transaction: no compares (so `and_then` runs) and no operations.
    pub const fn new() -> Self {
        Txn { compare: Vec::new(), success: Vec::new(), failure: Vec::new() }
    }

    /// The compares, all of which must hold for `and_then` to run (else `or_else`).
    pub fn when(mut self, compares: impl Into<Vec<Compare>>) -> Self {
        self.compare = compares.into();
        self
    }

    /// The operations run when every compare holds.
    pub fn and_then(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        self.success = operations.into();
        self
    }

    /// The operations run when a compare fails.
    pub fn or_else(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        self.failure = operations.into();
        self
    }

    fn to_store(&self) -> Result<store::TxnRequest> {
        Ok(store::TxnRequest {
            compare: self.compare.iter().map(Compare::to_store).collect::<Result<_>>()?,
            success: self.success.iter().map(TxnOp::to_store).collect::<Result<_>>()?,
            failure: self.failure.iter().map(TxnOp::to_store).collect::<Result<_>>()?,
        })
    }
}

/// One operation's response in a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOpResponse {
    Put(PutResponse),
    Get(GetResponse),
    Delete(DeleteResponse),
    Txn(TxnResponse),
}

/// What `txn` answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnResponse {
    header: ResponseHeader,
    succeeded: bool,
    responses: Vec<TxnOpResponse>,
}

impl TxnResponse {
    /// `ops`: the branch that ran, to know which deletes asked for their previous values.
    fn from_store(response: store::TxnResponse, txn: &Txn) -> TxnResponse {
        let ops = if response.succeeded { &txn.success } else { &txn.failure };
        let responses = response
            .responses
            .into_iter()
            .zip(ops)
            .map(|(r, op)| match (r, &op.0) {
                (store::TxnOpResponse::Put(put), _) => TxnOpResponse::Put(PutResponse {
                    header: ResponseHeader::new(put.header.revision),
                    prev_kv: put.prev_kv.map(KeyValue),
                }),
                (store::TxnOpResponse::Range(range), _) => TxnOpResponse::Get(GetResponse::from_store(range)),
                (store::TxnOpResponse::DeleteRange(delete), TxnOpKind::Delete(_, options)) => {
                    TxnOpResponse::Delete(DeleteResponse::from_store(delete, options.prev_kv))
                }
                (store::TxnOpResponse::DeleteRange(delete), _) => {
                    TxnOpResponse::Delete(DeleteResponse::from_store(delete, false))
                }
                (store::TxnOpResponse::Txn(inner), TxnOpKind::Txn(txn)) => {
                    TxnOpResponse::Txn(TxnResponse::from_store(inner, txn))
                }
                (store::TxnOpResponse::Txn(inner), _) => {
                    TxnOpResponse::Txn(TxnResponse::from_store(inner, &Txn::new()))
                }
            })
            .collect();
        TxnResponse { header: ResponseHeader::new(response.header.revision), succeeded: response.succeeded, responses }
    }

    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// Whether the compares held (the `and_then` branch ran).
    pub fn succeeded(&self) -> bool {
        self.succeeded
    }

    /// The answers of the branch that ran, one per operation, in order.
    pub fn op_responses(&self) -> Vec<TxnOpResponse> {
        self.responses.clone()
    }
}

fn put_request(key: &[u8], value: &[u8], options: &PutOptions) -> Result<store::PutRequest> {
    if options.ignore_value {
        return Err(Error::InvalidArgs("ignore_value is not simulated".into()));
    }
    Ok(store::PutRequest {
        key: text(key.to_vec(), "key")?,
        value: text(value.to_vec(), "value")?,
        lease: options.lease,
        prev_kv: options.prev_kv,
        ignore_lease: options.ignore_lease,
    })
}

/// etcd-client's KV client. Every call is one operation in the history, with its invocation and
/// completion times; calls the key-value model can judge are recorded as `put`, `get`, `delete`
/// and `cas`, the rest as `api` calls naming what they may change.
#[derive(Clone)]
pub struct KvClient {
    pub(crate) conn: Conn,
}

impl KvClient {
    /// Writes `value` to `key`: one new revision. A write whose reply is lost (a timeout) has an
    /// unknown outcome: the error is `DeadlineExceeded` and the write may still take effect.
    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse> {
        let options = options.unwrap_or_default();
        let request = put_request(&key.into(), &value.into(), &options)?;
        let plain = request.lease == 0 && !request.ignore_lease;
        let call = if plain {
            Call::Put { key: request.key.clone(), value: request.value.clone() }
        } else {
            let detail = format!(
                "{}={} lease {}{}",
                request.key,
                request.value,
                request.lease,
                if request.ignore_lease { " (ignore_lease)" } else { "" }
            );
            self.conn.api_call("put", detail, vec![Touched::Key(request.key.clone())])
        };
        let op = self.conn.invoke(call);
        match self.conn.write(Command::Put(request)).await {
            Ok(CommandResponse::Put(response)) => {
                let revision = response.header.revision;
                self.conn.ok(op, if plain { Return::Put { revision } } else { Conn::api_return("put", revision) });
                Ok(PutResponse { header: ResponseHeader::new(revision), prev_kv: response.prev_kv.map(KeyValue) })
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }

    /// Reads `key` (or a range, with the options). Linearizable unless `with_serializable`.
    pub async fn get(&mut self, key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Result<GetResponse> {
        let options = options.unwrap_or_default();
        let request = options.request(key.into())?;
        let request_revision = request.revision;
        let single = match &request.range {
            KeyRange::Key(key) if request.revision == 0 && !request.keys_only && !request.count_only => {
                Some(key.clone())
            }
            _ => None,
        };
        let call = match &single {
            Some(key) => Call::Get { key: key.clone() },
            None => {
                // A read of a key's or a prefix's state (what a watch consumer re-lists), as of
                // the revision its answer's `revision` names.
                let reads = match &request.range {
                    _ if request.count_only => Vec::new(),
                    KeyRange::Key(key) => vec![Touched::Key(key.clone())],
                    KeyRange::Prefix(prefix) => vec![Touched::Prefix(prefix.clone())],
                    _ => Vec::new(),
                };
                self.conn.api_read("get", describe_get(&request, options.serializable), reads)
            }
        };
        let op = self.conn.invoke(call);
        match self.conn.range(request, !options.serializable).await {
            Ok(Ok(response)) => {
                let revision = response.header.revision;
                let ret = match &single {
                    Some(_) => Return::Got { value: response.kvs.first().map(|kv| kv.value.clone()), revision },
                    // As of the revision asked for, if one was (the header names the newest).
                    None => Return::Api {
                        detail: format!("{} keys", response.count),
                        revision: if request_revision != 0 { request_revision } else { revision },
                        ephemeral_owner: None,
                    },
                };
                self.conn.ok(op, ret);
                Ok(GetResponse::from_store(response))
            }
            Ok(Err(error)) => {
                self.conn.fail(op, &error.to_string());
                Err(from_store(&error))
            }
            Err(unavailable) => {
                // A read changes nothing: it did not happen as far as the state is concerned.
                self.conn.fail(op, &unavailable.to_string());
                Err(from_unavailable(&unavailable))
            }
        }
    }

    /// Deletes `key` (or a range, with the options).
    pub async fn delete(&mut self, key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Result<DeleteResponse> {
        let options = options.unwrap_or_default();
        let range = options.end.range(key.into())?;
        let single = match &range {
            KeyRange::Key(key) => Some(key.clone()),
            _ => None,
        };
        let call = match &single {
            Some(key) => Call::Delete { key: key.clone() },
            None => self.conn.api_call("delete", describe_range(&range), vec![touched(&range)]),
        };
        let op = self.conn.invoke(call);
        match self.conn.write(Command::DeleteRange(store::DeleteRangeRequest { range, prev_kv: true })).await {
            Ok(CommandResponse::DeleteRange(response)) => {
                let revision = response.header.revision;
                let ret = match single {
                    Some(_) => Return::Deleted { count: response.deleted as u64, revision },
                    None => {
                        Return::Api { detail: format!("{} deleted", response.deleted), revision, ephemeral_owner: None }
                    }
                };
                self.conn.ok(op, ret);
                Ok(DeleteResponse::from_store(response, options.prev_kv))
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }

    /// Discards the history below `revision`: later reads and watches from below it fail with
    /// `OutOfRange` ("required revision has been compacted").
    pub async fn compact(&mut self, revision: i64, _options: Option<CompactionOptions>) -> Result<CompactionResponse> {
        let op = self.conn.invoke(self.conn.api_call("compact", format!("revision {revision}"), Vec::new()));
        match self.conn.write(Command::Compact { revision }).await {
            Ok(CommandResponse::Compact { header }) => {
                self.conn.ok(op, Conn::api_return("compacted", header.revision));
                Ok(CompactionResponse { header: ResponseHeader::new(header.revision) })
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }

    /// Runs a transaction. A single-key compare of the value (or of version 0, "absent") with a
    /// put of that key as its only success operation and no failure operation is recorded as a
    /// `cas`, which the key-value model judges; any other transaction as an `api` call naming
    /// every key its branches may write.
    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse> {
        let request = txn.to_store()?;
        let cas = as_cas(&request);
        let call = match &cas {
            Some((key, expected, new)) => Call::Cas { key: key.clone(), expected: expected.clone(), new: new.clone() },
            None => {
                let mut writes = Vec::new();
                txn_writes(&request, &mut writes);
                writes.sort();
                writes.dedup();
                self.conn.api_call("txn", describe_txn(&request), writes)
            }
        };
        let op = self.conn.invoke(call);
        match self.conn.write(Command::Txn(request)).await {
            Ok(CommandResponse::Txn(response)) => {
                let revision = response.header.revision;
                let ret = match cas {
                    Some(_) => Return::Cas { swapped: response.succeeded, revision },
                    None => Conn::api_return(if response.succeeded { "succeeded" } else { "failed" }, revision),
                };
                self.conn.ok(op, ret);
                Ok(TxnResponse::from_store(response, &txn))
            }
            other => Err(self.conn.write_failed(op, other)),
        }
    }
}

/// `(key, expected, new)` when the transaction is a compare-and-swap the model knows.
fn as_cas(txn: &store::TxnRequest) -> Option<(String, Option<String>, String)> {
    let [compare] = txn.compare.as_slice() else { return None };
    let [store::TxnOp::Put(put)] = txn.success.as_slice() else { return None };
    if !txn.failure.is_empty() || put.key != compare.key || put.lease != 0 || put.ignore_lease {
        return None;
    }
    let expected = match (&compare.result, &compare.target) {
        (store::CompareResult::Equal, store::CompareTarget::Value(value)) => Some(value.clone()),
        (store::CompareResult::Equal, store::CompareTarget::Version(0)) => None,
        _ => return None,
    };
    Some((put.key.clone(), expected, put.value.clone()))
}

fn txn_writes(txn: &store::TxnRequest, out: &mut Vec<Touched>) {
    for op in txn.success.iter().chain(&txn.failure) {
        match op {
            store::TxnOp::Put(put) => out.push(Touched::Key(put.key.clone())),
            store::TxnOp::DeleteRange(delete) => out.push(touched(&delete.range)),
            store::TxnOp::Txn(inner) => txn_writes(inner, out),
            store::TxnOp::Range(_) => {}
        }
    }
}

fn describe_get(request: &store::RangeRequest, serializable: bool) -> String {
    let mut text = describe_range(&request.range);
    if request.revision != 0 {
        text.push_str(&format!(" at revision {}", request.revision));
    }
    if serializable {
        text.push_str(" (serializable)");
    }
    text
}

fn describe_txn(txn: &store::TxnRequest) -> String {
    let compares: Vec<String> =
        txn.compare.iter().map(|c| format!("{} {:?} {:?}", c.key, c.result, c.target)).collect();
    let ops = |ops: &[store::TxnOp]| -> String {
        ops.iter()
            .map(|op| match op {
                store::TxnOp::Put(put) => format!("put {}={}", put.key, put.value),
                store::TxnOp::Range(range) => format!("get {}", describe_range(&range.range)),
                store::TxnOp::DeleteRange(delete) => format!("delete {}", describe_range(&delete.range)),
                store::TxnOp::Txn(_) => "txn".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("if [{}] then [{}] else [{}]", compares.join(", "), ops(&txn.success), ops(&txn.failure))
}

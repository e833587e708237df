//! Errors with the etcd-client crate's shape (`Error::GRpcStatus(status)`) and etcd's own codes
//! and messages, so that user code matching on them behaves as it would against a real cluster.
//!
//! The messages are etcd's (server/etcdserver/api/v3rpc/rpctypes/error.go; the Election service's
//! in server/etcdserver/api/v3election/election.go), the codes gRPC's (as tonic's `Code` names them).

use coordsim_sim::client::Unavailable;
use coordsim_sim::store::StoreError;

/// etcd-client's `Result`.
pub type Result<T> = std::result::Result<T, Error>;

/// etcd-client's `Error`, with the variants a simulated cluster can produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The call was malformed before it left the client (a key that is not UTF-8, a range
    /// compare, a lock without a lease).
    InvalidArgs(String),
    /// The server (or the client's own deadline) answered with a gRPC status.
    GRpcStatus(Status),
    /// The watch stream is closed.
    WatchError(String),
    /// The keepalive stream is closed.
    LeaseKeepAliveError(String),
    /// An election call failed on the client side.
    ElectError(String),
    /// An endpoint given to `Client::connect` names no simulated server.
    EndpointError(String),
    /// Something the simulator does not provide.
    Internal(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidArgs(e) => write!(f, "invalid arguments: {e}"),
            Error::GRpcStatus(e) => write!(f, "grpc request error: {e}"),
            Error::WatchError(e) => write!(f, "watch error: {e}"),
            Error::LeaseKeepAliveError(e) => write!(f, "lease keep alive error: {e}"),
            Error::ElectError(e) => write!(f, "election error: {e}"),
            Error::EndpointError(e) => write!(f, "endpoint error: {e}"),
            Error::Internal(e) => write!(f, "internal error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// tonic's `Status`: a gRPC code and etcd's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    code: Code,
    message: String,
}

impl Status {
    /// A gRPC status with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Status {
        Status { code, message: message.into() }
    }

    /// The gRPC status code (etcd's: `Unavailable` for no leader, `NotFound` for a lease, ...).
    pub fn code(&self) -> Code {
        self.code
    }

    /// etcd's message (`etcdserver: requested lease not found`), which code may match on.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status: {:?}, message: {:?}", self.code, self.message)
    }
}

/// gRPC status codes, named as tonic names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Ok,
    Cancelled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

/// etcd's message for an unknown lease.
pub const LEASE_NOT_FOUND: &str = "etcdserver: requested lease not found";
/// etcd's message for a read or watch below the compaction point.
pub const COMPACTED: &str = "etcdserver: mvcc: required revision has been compacted";
/// etcd's message for a read above the current revision.
pub const FUTURE_REV: &str = "etcdserver: mvcc: required revision is a future revision";
/// etcd's message for a request that got no answer in time.
pub const REQUEST_TIMED_OUT: &str = coordsim_sim::rpc::REQUEST_TIMED_OUT;
/// etcd's Election service: the leadership named is over.
pub const NOT_LEADER: &str = "election: not leader";
/// etcd's Election service: nobody leads.
pub const NO_LEADER: &str = "election: no leader";

pub(crate) fn status(code: Code, message: impl Into<String>) -> Error {
    Error::GRpcStatus(Status::new(code, message))
}

/// A store's rejection, as etcd's server says it.
pub(crate) fn from_store(error: &StoreError) -> Error {
    match error {
        StoreError::Compacted { .. } => status(Code::OutOfRange, COMPACTED),
        StoreError::FutureRevision { .. } => status(Code::OutOfRange, FUTURE_REV),
        StoreError::LeaseNotFound(_) => status(Code::NotFound, LEASE_NOT_FOUND),
        StoreError::LeaseExists(_) => status(Code::FailedPrecondition, "etcdserver: lease already exists"),
        StoreError::InvalidTtl => status(Code::InvalidArgument, "etcdserver: lease TTL is invalid"),
        StoreError::DuplicateKey(_) => status(Code::InvalidArgument, "etcdserver: duplicate key given in txn request"),
        StoreError::KeyNotFound(_) => status(Code::InvalidArgument, "etcdserver: key not found"),
        StoreError::InvalidRequest(reason) => status(Code::InvalidArgument, format!("etcdserver: {reason}")),
    }
}

/// No server answered within the call's budget: for a write, the outcome is unknown. etcd
/// answers a proposal it could not commit in time with "request timed out" (Unavailable, as the
/// simulated member does after etcd's request timeout); a client whose own deadline passes first
/// sees DeadlineExceeded. Both leave the outcome open.
pub(crate) fn from_unavailable(error: &Unavailable) -> Error {
    if error.last == REQUEST_TIMED_OUT {
        return status(Code::Unavailable, REQUEST_TIMED_OUT);
    }
    status(Code::DeadlineExceeded, format!("{REQUEST_TIMED_OUT} ({error})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_members_request_timeout_is_unavailable_and_the_clients_own_deadline_is_deadline_exceeded() {
        let answered = Unavailable { budget_ms: 30_000, attempts: 1, last: REQUEST_TIMED_OUT.into() };
        let Error::GRpcStatus(status) = from_unavailable(&answered) else { panic!() };
        assert_eq!((status.code(), status.message()), (Code::Unavailable, REQUEST_TIMED_OUT));
        let silent = Unavailable { budget_ms: 1_000, attempts: 1, last: "no reply within 500 ms".into() };
        let Error::GRpcStatus(status) = from_unavailable(&silent) else { panic!() };
        assert_eq!(status.code(), Code::DeadlineExceeded);
        assert!(status.message().starts_with(REQUEST_TIMED_OUT), "{}", status.message());
    }
}

//! Faults that live in coordsim's own transport rather than in madsim's network: a delay on one
//! directed link (`link-delay`). Every RPC coordsim sends goes through [`call`], which holds the
//! request for the link's current delay before sending it. The delays are kept per sending node
//! in the run's node registry (`crate::node::add_delay`).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::net::rpc::Request;

use crate::node;

/// An RPC with a timeout, through the link-delay faults: the delay counts against the timeout,
/// as a slow link would.
pub async fn call<R: Request>(
    endpoint: &Endpoint,
    to: SocketAddr,
    request: R,
    timeout: Duration,
) -> io::Result<R::Response> {
    let send = async {
        if let Some(delay) = node::delay_to(to.ip()) {
            madsim::time::sleep(delay).await;
        }
        endpoint.call(to, request).await
    };
    madsim::time::timeout(timeout, send).await.map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "RPC timeout"))?
}

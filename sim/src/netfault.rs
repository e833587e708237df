//! Faults that live in coordsim's own transport rather than in madsim's network: a delay on one
//! directed link (`link-delay`). Every RPC coordsim sends goes through [`call`], which holds the
//! request for the link's current delay before sending it.
//!
//! Thread-local like the clock registry: one simulation per thread.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::net::rpc::Request;

use crate::node::current_node_name;

thread_local! {
    /// (sending node's name, receiving node's address) → delays of the active faults on it.
    static DELAYS: RefCell<BTreeMap<(String, IpAddr), Vec<Duration>>> = RefCell::new(BTreeMap::new());
}

/// Forgets every delay (a new run starts).
pub fn reset() {
    DELAYS.with(|delays| delays.borrow_mut().clear());
}

/// A delay fault starts on the link `from` → `to`.
pub fn add_delay(from: &str, to: IpAddr, delay: Duration) {
    DELAYS.with(|delays| delays.borrow_mut().entry((from.to_string(), to)).or_default().push(delay));
}

/// That fault ends.
pub fn remove_delay(from: &str, to: IpAddr, delay: Duration) {
    DELAYS.with(|delays| {
        let mut delays = delays.borrow_mut();
        if let Some(active) = delays.get_mut(&(from.to_string(), to)) {
            if let Some(position) = active.iter().position(|d| *d == delay) {
                active.remove(position);
            }
            if active.is_empty() {
                delays.remove(&(from.to_string(), to));
            }
        }
    });
}

/// The delay the running node's messages to `to` currently suffer (the longest active one).
fn delay_to(to: IpAddr) -> Option<Duration> {
    let from = current_node_name()?;
    DELAYS.with(|delays| delays.borrow().get(&(from, to)).and_then(|active| active.iter().max().copied()))
}

/// An RPC with a timeout, through the link-delay faults: the delay counts against the timeout,
/// as a slow link would.
pub async fn call<R: Request>(
    endpoint: &Endpoint,
    to: SocketAddr,
    request: R,
    timeout: Duration,
) -> io::Result<R::Response> {
    let send = async {
        if let Some(delay) = delay_to(to.ip()) {
            madsim::time::sleep(delay).await;
        }
        endpoint.call(to, request).await
    };
    madsim::time::timeout(timeout, send).await.map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "RPC timeout"))?
}

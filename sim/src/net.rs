//! coordsim's simulated network: endpoints bound to addresses, request/response calls between
//! them, and the faults the nemesis puts on links (cuts, loss, latency, delays, lost replies).
//!
//! Our own rather than madsim's `Endpoint`, for time:
//! - every madsim send and receive first sleeps a random 0–5 µs through `TimeHandle::sleep`,
//!   which rounds any sleep up to 1 ms (madsim 0.2.34 src/sim/net/mod.rs `rand_delay`,
//!   src/sim/time/mod.rs `sleep_until`): a call cost at least 4 ms on top of two latencies, where
//!   a call to a real etcd on loopback takes a fraction of a millisecond;
//! - madsim has one latency range for the whole network (`Config::send_latency`), where a link
//!   model is per link;
//! - a madsim RPC server is one receive loop per request type that takes at most one request per
//!   millisecond, and a reply to a call that timed out stays in the caller's mailbox for ever,
//!   scanned by every later receive.
//!
//! Here a message is put in the receiver's inbox at once with its arrival time (send time + the
//! link's latency), and the receiver takes it when its clock reaches that time: a paused receiver
//! finds it on resume, a killed one never (its inbox goes with its tasks). Whether a message is
//! lost (a cut link, packet loss, a dropped reply) is decided when it is sent, as in madsim.
//! Timers are exact ([`sleep_until_exact`]). Random draws come from madsim's seeded generator.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use madsim::net::rpc::Request;
use madsim::rand::Rng;
use madsim::task::NodeId;
use tokio::sync::{Notify, oneshot};

use crate::node;
use coordsim_core::timing::{Bandwidth, Dist, MESSAGE_FRAMING_BYTES};

/// One-way latency of a message, drawn for each message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkLatency {
    /// Uniform on `min..max`, drawn as madsim draws it (`gen_range`), so that runs without a
    /// time model keep the histories they had on madsim's network.
    Uniform { min: Duration, max: Duration },
    /// A time model's distribution (`coordsim_core::timing::Dist`).
    Model(Dist),
}

impl LinkLatency {
    /// madsim's default (`Config::send_latency`), which every run had before the network was
    /// ours: 1–10 ms per message.
    pub const MADSIM: LinkLatency =
        LinkLatency::Uniform { min: Duration::from_millis(1), max: Duration::from_millis(10) };

    fn draw(&self) -> Duration {
        match self {
            LinkLatency::Uniform { min, max } if max <= min => *min,
            LinkLatency::Uniform { min, max } => madsim::rand::thread_rng().gen_range(*min..*max),
            LinkLatency::Model(dist) => crate::timing::draw(dist),
        }
    }
}

/// The latency of every link of a run, and what each node can send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Links {
    /// Every link's, unless it is between two servers and `peer` is given.
    pub latency: LinkLatency,
    pub peer: Option<LinkLatency>,
    /// Each node's outbound capacity (`coordsim_core::timing::NetworkTimes::bandwidth`);
    /// `None`: messages take no time to go out.
    pub bandwidth: Option<Bandwidth>,
}

impl Links {
    /// madsim's 1–10 ms on every link.
    pub const MADSIM: Links = Links { latency: LinkLatency::MADSIM, peer: None, bandwidth: None };

    /// A time model's network.
    pub fn of(model: &coordsim_core::timing::TimeModel) -> Links {
        Links {
            latency: LinkLatency::Model(model.network.latency.clone()),
            peer: model.network.peer.clone().map(LinkLatency::Model),
            bandwidth: model.network.bandwidth,
        }
    }
}

/// A message's size on the wire without its framing: its encoded length (bincode's, close to
/// protobuf's and jute's for the same fields).
fn encoded_bytes<T: serde::Serialize>(message: &T) -> u64 {
    bincode::serialized_size(message).unwrap_or(0)
}

/// A filter on replies travelling to one node: false drops the reply.
type ReplyFilter = Arc<dyn Fn(&dyn Any) -> bool + Send + Sync>;

/// The run's network: who is bound where, and the state of the links.
struct Network {
    /// Every link's latency when no fault overrides it.
    links: Links,
    /// The nodes that are servers: a link between two of them has `links.peer`.
    servers: BTreeSet<NodeId>,
    /// A `latency` fault's range, for every link while it lasts.
    latency_override: Option<LinkLatency>,
    /// Probability that a message is lost (`packet-loss`).
    loss_rate: f64,
    /// Directed links that carry nothing (partitions).
    clogged: BTreeSet<(NodeId, NodeId)>,
    /// (sending node, receiving address) → the extra delays of active `link-delay` faults.
    delays: BTreeMap<(NodeId, IpAddr), Vec<Duration>>,
    /// Receiving node → filter on the replies it is sent (`drop-replies`).
    reply_filters: BTreeMap<NodeId, ReplyFilter>,
    endpoints: BTreeMap<SocketAddr, Bound>,
    /// Orders messages that arrive at the same instant: first sent, first taken.
    sequence: u64,
    /// (sending node, receiving address) → when the last ordered message sent on that link
    /// arrives: an ordered message never arrives before one sent before it ([`Endpoint::call_ordered`]).
    ordered_tail: BTreeMap<(NodeId, SocketAddr), Instant>,
    /// Sending node → receiving node → when the last message queued on that connection has
    /// gone out (with `links.bandwidth` only): the connections still sending share the node's
    /// capacity.
    outbound: BTreeMap<NodeId, BTreeMap<NodeId, Instant>>,
}

struct Bound {
    node: NodeId,
    inbox: Weak<Inbox>,
}

/// Starts the run's network with `links`. Needs an installed node registry, whose guard it
/// lives and ends with.
pub fn install(links: Links) {
    node::attach_to_run(Network {
        links,
        servers: BTreeSet::new(),
        latency_override: None,
        loss_rate: 0.0,
        clogged: BTreeSet::new(),
        delays: BTreeMap::new(),
        reply_filters: BTreeMap::new(),
        endpoints: BTreeMap::new(),
        sequence: 0,
        ordered_tail: BTreeMap::new(),
        outbound: BTreeMap::new(),
    });
}

fn with_network<R>(f: impl FnOnce(&mut Network) -> R) -> R {
    node::with_run_attached(f).expect("the simulated network is used inside a run that installed it (net::install)")
}

/// Sleeps until `deadline` exactly. madsim's `sleep` and `sleep_until` round up to 1 ms from
/// now; a reset `Sleep` keeps the deadline it is given.
pub async fn sleep_until_exact(deadline: Instant) {
    let mut sleep = std::pin::pin!(madsim::time::sleep_until(deadline));
    sleep.as_mut().reset(deadline);
    sleep.await
}

/// What the receiver of a request needs to answer it.
struct Envelope {
    from: NodeId,
    request: Box<dyn Any + Send>,
    reply: Box<dyn Any + Send>,
}

/// Messages waiting for an endpoint, by request type, in arrival order.
#[derive(Default)]
struct Inbox {
    queues: Mutex<BTreeMap<TypeId, Queue>>,
}

#[derive(Default)]
struct Queue {
    /// (arrival, sequence) → message.
    waiting: BTreeMap<(Instant, u64), Envelope>,
    notify: Arc<Notify>,
    /// A handler takes this type (one per type: a second would be a bug in our code).
    handled: bool,
}

/// An address bound by a node's task: it receives requests there and calls other addresses from
/// there. Cloning shares the binding; it ends when the last clone is dropped (when the node is
/// killed, with its tasks).
#[derive(Clone)]
pub struct Endpoint {
    addr: SocketAddr,
    node: NodeId,
    inbox: Arc<Inbox>,
}

impl Endpoint {
    /// Binds `addr` for the running node (port 0: a free port). `AddrInUse` if another node's
    /// live endpoint holds it; a restarted node takes its address back from its former life.
    pub async fn bind(addr: SocketAddr) -> io::Result<Endpoint> {
        let node = node::current().expect("Endpoint::bind from a node of the run");
        let inbox = Arc::new(Inbox::default());
        let addr = with_network(|net| {
            let mut addr = addr;
            if addr.port() == 0 {
                addr.set_port(net.ephemeral_port(addr.ip()));
            }
            if let Some(bound) = net.endpoints.get(&addr) {
                if bound.node != node && bound.inbox.strong_count() > 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("{addr} is bound by node {}", bound.node),
                    ));
                }
            }
            net.endpoints.insert(addr, Bound { node, inbox: Arc::downgrade(&inbox) });
            Ok(addr)
        })?;
        Ok(Endpoint { addr, node, inbox })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends `request` to `to` and waits for the answer, at most `timeout` (a lost request or
    /// reply, or an address nobody binds, is a timeout, as on a datagram network).
    pub async fn call<R: Request>(&self, to: SocketAddr, request: R, timeout: Duration) -> io::Result<R::Response> {
        self.exchange(to, request, timeout, false).await
    }

    /// [`Endpoint::call`] on a stream: the request arrives no earlier than every ordered request
    /// this node sent to `to` before it (as on one TCP connection, where a later segment waits
    /// for an earlier one), so the receiver takes them in the order they were sent. Losses
    /// still lose single messages (a cut link, packet loss); replies are not ordered.
    pub async fn call_ordered<R: Request>(
        &self,
        to: SocketAddr,
        request: R,
        timeout: Duration,
    ) -> io::Result<R::Response> {
        self.exchange(to, request, timeout, true).await
    }

    async fn exchange<R: Request>(
        &self,
        to: SocketAddr,
        request: R,
        timeout: Duration,
        ordered: bool,
    ) -> io::Result<R::Response> {
        let exchange = async {
            let (reply_tx, reply_rx) = oneshot::channel::<(Instant, R::Response)>();
            let bytes = with_network(|net| net.links.bandwidth.is_some()).then(|| encoded_bytes(&request));
            let envelope = Envelope { from: self.node, request: Box::new(request), reply: Box::new(reply_tx) };
            if self.send(to, TypeId::of::<R>(), envelope, bytes, ordered) {
                if let Ok((arrival, response)) = reply_rx.await {
                    sleep_until_exact(arrival).await;
                    return response;
                }
            }
            futures::future::pending().await
        };
        madsim::time::timeout(timeout, exchange)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "RPC timeout"))
    }

    /// Puts a request of `bytes` (its encoded size, when the network has a bandwidth) in the
    /// inbox bound at `to`, arriving once it has gone out and travelled the link's latency
    /// (and, if `ordered`, no earlier than the ordered messages sent before it on the link);
    /// false if it is lost.
    fn send(&self, to: SocketAddr, kind: TypeId, envelope: Envelope, bytes: Option<u64>, ordered: bool) -> bool {
        let now = Instant::now();
        let target = with_network(|net| {
            let bound = net.endpoints.get(&to)?;
            let (node, inbox) = (bound.node, bound.inbox.upgrade()?);
            let latency = net.transit(self.node, node)?;
            let delay = net.delays.get(&(self.node, to.ip())).and_then(|d| d.iter().max().copied());
            let sent = net.departure(self.node, node, now, bytes);
            let mut arrival = sent + latency + delay.unwrap_or_default();
            if ordered {
                let tail = net.ordered_tail.entry((self.node, to)).or_insert(arrival);
                arrival = arrival.max(*tail);
                *tail = arrival;
            }
            net.sequence += 1;
            Some((inbox, arrival, net.sequence))
        });
        let Some((inbox, arrival, sequence)) = target else { return false };
        let notify = {
            let mut queues = inbox.queues.lock().expect("inbox lock poisoned");
            let queue = queues.entry(kind).or_default();
            queue.waiting.insert((arrival, sequence), envelope);
            queue.notify.clone()
        };
        notify.notify_one();
        true
    }

    /// Serves requests of type `R`: `f` answers each, in a task of its own, as soon as it has
    /// arrived. One handler per request type and endpoint.
    pub fn add_rpc_handler<R, F, Fut>(&self, f: F)
    where
        R: Request,
        F: FnMut(R) -> Fut + Send + 'static,
        Fut: Future<Output = R::Response> + Send + 'static,
    {
        self.serve(f, false);
    }

    /// [`Endpoint::add_rpc_handler`] for a client's calls, as a gRPC server takes them: a call
    /// its caller has given up on before the server takes it (it waited out its timeout while
    /// the server was paused, or its request travelled longer than that) is not served. gRPC
    /// carries the call's deadline to the server (`grpc-timeout`) and cancels the call when the
    /// client does (RST_STREAM), and etcd's handlers stop on the cancelled context (raft's
    /// `Propose` returns `ctx.Err()`). Without this, a request that reached a paused member and
    /// that its client had retried elsewhere ran when the member woke, after the retry: an
    /// unlock then deleted its client's next lock key.
    pub fn add_call_handler<R, F, Fut>(&self, f: F)
    where
        R: Request,
        F: FnMut(R) -> Fut + Send + 'static,
        Fut: Future<Output = R::Response> + Send + 'static,
    {
        self.serve(f, true);
    }

    fn serve<R, F, Fut>(&self, mut f: F, skip_abandoned: bool)
    where
        R: Request,
        F: FnMut(R) -> Fut + Send + 'static,
        Fut: Future<Output = R::Response> + Send + 'static,
    {
        {
            let mut queues = self.inbox.queues.lock().expect("inbox lock poisoned");
            let queue = queues.entry(TypeId::of::<R>()).or_default();
            assert!(!queue.handled, "a second handler for one request type on {}", self.addr);
            queue.handled = true;
        }
        let endpoint = self.clone();
        madsim::task::spawn(async move {
            loop {
                let envelope = endpoint.receive(TypeId::of::<R>()).await;
                let request = *envelope.request.downcast::<R>().expect("a queue holds one request type");
                let reply =
                    *envelope.reply.downcast::<oneshot::Sender<(Instant, R::Response)>>().expect("its reply type");
                if skip_abandoned && reply.is_closed() {
                    continue;
                }
                let (answer, (me, caller)) = (f(request), (endpoint.node, envelope.from));
                madsim::task::spawn(async move {
                    let response = answer.await;
                    let filtered = |net: &mut Network| {
                        net.reply_filters.get(&caller).is_none_or(|keep| keep(&response as &dyn Any))
                    };
                    let arrival = with_network(|net| {
                        if !filtered(net) {
                            return None;
                        }
                        let latency = net.transit(me, caller)?;
                        let bytes = net.links.bandwidth.is_some().then(|| encoded_bytes(&response));
                        Some(net.departure(me, caller, Instant::now(), bytes) + latency)
                    });
                    if let Some(arrival) = arrival {
                        // The caller may have given up: then nobody waits for the answer.
                        let _ = reply.send((arrival, response));
                    }
                });
            }
        });
    }

    /// The next request of `kind` that has arrived, waiting for one if need be.
    async fn receive(&self, kind: TypeId) -> Envelope {
        loop {
            let (next, notify) = {
                let mut queues = self.inbox.queues.lock().expect("inbox lock poisoned");
                let queue = queues.entry(kind).or_default();
                match queue.waiting.first_key_value().map(|(key, _)| *key) {
                    Some(key) if key.0 <= Instant::now() => {
                        return queue.waiting.remove(&key).expect("the first key is there");
                    }
                    next => (next.map(|(arrival, _)| arrival), queue.notify.clone()),
                }
            };
            let notified = notify.notified();
            match next {
                Some(arrival) => {
                    let sleep = std::pin::pin!(sleep_until_exact(arrival));
                    futures::future::select(std::pin::pin!(notified), sleep).await;
                }
                None => notified.await,
            }
        }
    }
}

/// The first port handed out for a bind to port 0 (Linux's default ephemeral range starts here).
const EPHEMERAL_PORTS: u16 = 32768;

impl Network {
    /// A port of `ip` that no live endpoint holds.
    fn ephemeral_port(&mut self, ip: IpAddr) -> u16 {
        let live = |net: &Network, port: u16| {
            net.endpoints.get(&SocketAddr::new(ip, port)).is_some_and(|bound| bound.inbox.strong_count() > 0)
        };
        let port = (EPHEMERAL_PORTS..=u16::MAX).find(|port| !live(self, *port));
        port.expect("fewer than 32,768 live endpoints on one address")
    }

    /// When a message of `bytes` (encoded, without framing) that `from` sends to `to` at `now`
    /// has gone out. The node's capacity is shared evenly among its connections that have
    /// something to send (processor sharing, as a NIC's queue interleaves flows). The message
    /// goes after what is queued before it on its own connection: `own` is the time until that
    /// has gone out (as it was reckoned when sent, its share included) plus this message's size
    /// at the full rate, and the message is done once each other connection still sending has
    /// had as much, or all it had left: `own + Σ min(left_i, own)`. Two approximations, both
    /// stated in docs/time.md: a message sent later does not move one already sent (its arrival
    /// is fixed when it is sent), so overlapping transfers finish a little early; and the queued
    /// part of `own` already holds its share, so a message behind a backlog on a busy node goes
    /// out a little late. `now` without a bandwidth.
    fn departure(&mut self, from: NodeId, to: NodeId, now: Instant, bytes: Option<u64>) -> Instant {
        let (Some(rate), Some(bytes)) = (self.links.bandwidth, bytes) else { return now };
        let connections = self.outbound.entry(from).or_default();
        connections.retain(|_, gone_out| *gone_out > now);
        let queued = connections.get(&to).map_or(Duration::ZERO, |gone_out| *gone_out - now);
        let own = queued + rate.transmit(bytes + MESSAGE_FRAMING_BYTES);
        let shared: Duration =
            connections.iter().filter(|(other, _)| **other != to).map(|(_, gone_out)| (*gone_out - now).min(own)).sum();
        let gone_out = now + own + shared;
        connections.insert(to, gone_out);
        gone_out
    }

    /// The latency of one message from `from` to `to`, or `None` if it is lost.
    fn transit(&mut self, from: NodeId, to: NodeId) -> Option<Duration> {
        if self.clogged.contains(&(from, to)) {
            return None;
        }
        if self.loss_rate > 0.0 && madsim::rand::thread_rng().gen_bool(self.loss_rate) {
            return None;
        }
        if let Some(latency) = &self.latency_override {
            return Some(latency.draw());
        }
        match &self.links.peer {
            Some(peer) if self.servers.contains(&from) && self.servers.contains(&to) => Some(peer.draw()),
            _ => Some(self.links.latency.draw()),
        }
    }
}

/// `node` is a server: links between two servers have the peer latency.
pub fn add_server(node: NodeId) {
    with_network(|net| net.servers.insert(node));
}

/// The link from `from` to `to` stops carrying messages (sent after now).
pub fn clog_link(from: NodeId, to: NodeId) {
    with_network(|net| net.clogged.insert((from, to)));
}

/// It carries them again.
pub fn unclog_link(from: NodeId, to: NodeId) {
    with_network(|net| net.clogged.remove(&(from, to)));
}

/// Every message is lost with probability `rate` (0 restores a lossless network).
pub fn set_loss_rate(rate: f64) {
    with_network(|net| net.loss_rate = rate);
}

/// Every link's latency is `range` while a latency fault lasts (`None`: the run's own again).
pub fn set_latency_override(range: Option<Range<Duration>>) {
    with_network(|net| net.latency_override = range.map(|r| LinkLatency::Uniform { min: r.start, max: r.end }));
}

/// Replies of type `T` sent to `node` are dropped when `keep` says false (one filter per node: a
/// new one replaces the old).
pub fn filter_replies_to<T: Any>(node: NodeId, keep: impl Fn(&T) -> bool + Send + Sync + 'static) {
    let filter: ReplyFilter = Arc::new(move |reply: &dyn Any| reply.downcast_ref::<T>().is_none_or(&keep));
    with_network(|net| net.reply_filters.insert(node, filter));
}

/// A `link-delay` fault starts: requests from node `from` to address `to` arrive `delay` later.
pub fn add_delay(from: NodeId, to: IpAddr, delay: Duration) {
    with_network(|net| net.delays.entry((from, to)).or_default().push(delay));
}

/// That fault ends.
pub fn remove_delay(from: NodeId, to: IpAddr, delay: Duration) {
    with_network(|net| {
        if let Some(active) = net.delays.get_mut(&(from, to)) {
            if let Some(position) = active.iter().position(|d| *d == delay) {
                active.remove(position);
            }
            if active.is_empty() {
                net.delays.remove(&(from, to));
            }
        }
    });
}

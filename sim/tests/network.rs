//! The simulated network (`coordsim_sim::net`) on its own: a call costs its two link latencies and
//! nothing more, the faults the nemesis uses (cut links, paused receivers, dropped replies)
//! do what they say, and with a bandwidth a message takes its size over the node's capacity.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use coordsim_sim::clock::Clock;
use coordsim_sim::net::{self, Endpoint, LinkLatency, Links};
use coordsim_sim::node;
use madsim::net::rpc::Request;
use madsim::runtime::{Handle, Runtime};
use madsim::task::NodeId;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Ping(u64);

impl Request for Ping {
    type Response = u64;
    const ID: u64 = 0x5049_4e47;
}

const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 7000);
const CLIENT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 7000);
const LATENCY: Duration = Duration::from_micros(100);

/// What a test's client sees: each call's result and how long it took.
type Outcome = Vec<(Result<u64, std::io::ErrorKind>, Duration)>;

/// A server that answers `Ping(n)` with `n + 1` and counts the pings it served, and a client that
/// runs `script` against it, on links of exactly [`LATENCY`]; `faults` runs beside them on the
/// main task with the two nodes' ids.
fn run<S, F>(script: S, faults: F) -> (Outcome, u64)
where
    S: FnOnce(Endpoint) -> futures::future::BoxFuture<'static, Outcome> + Send + 'static,
    F: FnOnce(NodeId, NodeId) -> futures::future::BoxFuture<'static, ()> + Send + 'static,
{
    let exact = LinkLatency::Uniform { min: LATENCY, max: LATENCY };
    let (outcome, taken) = run_on(1, exact, Serve::Rpc, script, faults);
    (outcome, taken.len() as u64)
}

/// How the test's server takes its pings.
#[derive(Clone, Copy)]
enum Serve {
    /// `Endpoint::add_rpc_handler`: every ping that arrives.
    Rpc,
    /// `Endpoint::add_call_handler`: not those whose caller has given up.
    Calls,
}

/// [`run`] on the simulator seeded with `seed` and links of `latency`; also returns the pings
/// the server took, in the order it took them.
fn run_on<S, F>(seed: u64, latency: LinkLatency, serve: Serve, script: S, faults: F) -> (Outcome, Vec<u64>)
where
    S: FnOnce(Endpoint) -> futures::future::BoxFuture<'static, Outcome> + Send + 'static,
    F: FnOnce(NodeId, NodeId) -> futures::future::BoxFuture<'static, ()> + Send + 'static,
{
    Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(async move {
        let epoch = Instant::now();
        let _nodes = node::install(epoch);
        net::install(Links { latency, peer: None, bandwidth: None });
        let taken = Arc::new(Mutex::new(Vec::new()));
        let log = taken.clone();
        let handle = Handle::current();
        let server = handle
            .create_node()
            .name("s1")
            .ip(SERVER.ip())
            .init(move || {
                let log = log.clone();
                async move {
                    let endpoint = Endpoint::bind(SERVER).await.expect("the server binds");
                    let handler = move |Ping(n)| {
                        log.lock().unwrap().push(n);
                        async move { n + 1 }
                    };
                    match serve {
                        Serve::Rpc => endpoint.add_rpc_handler(handler),
                        Serve::Calls => endpoint.add_call_handler(handler),
                    }
                    futures::future::pending::<()>().await;
                }
            })
            .build();
        node::bind(server.id(), "s1", Clock::true_time(epoch));
        let client = handle.create_node().name("c1").ip(CLIENT.ip()).build();
        node::bind(client.id(), "c1", Clock::true_time(epoch));
        let faults = madsim::task::spawn(faults(server.id(), client.id()));
        let outcome = client
            .spawn(async move {
                // The server binds in its first poll.
                madsim::time::sleep(Duration::from_millis(1)).await;
                let endpoint = Endpoint::bind(CLIENT).await.expect("the client binds");
                script(endpoint).await
            })
            .await
            .expect("the client's script ends");
        faults.await.expect("the faults end");
        let taken = taken.lock().unwrap().clone();
        (outcome, taken)
    })
}

async fn ping(endpoint: &Endpoint, n: u64, timeout: Duration) -> (Result<u64, std::io::ErrorKind>, Duration) {
    let start = Instant::now();
    let result = endpoint.call(SERVER, Ping(n), timeout).await.map_err(|e| e.kind());
    (result, start.elapsed())
}

fn no_faults(_: NodeId, _: NodeId) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(async {})
}

#[test]
fn a_call_costs_its_two_latencies_and_no_millisecond_floor() {
    let (outcome, served) =
        run(|endpoint| Box::pin(async move { vec![ping(&endpoint, 41, Duration::from_secs(1)).await] }), no_faults);
    let (result, took) = outcome[0];
    assert_eq!(result, Ok(42));
    assert_eq!(served, 1);
    // madsim's own network cost at least 4 ms here (a 1 ms sleep at every send and receive).
    assert!(took >= 2 * LATENCY && took < 3 * LATENCY, "a call took {took:?}");
}

#[test]
fn a_cut_link_is_a_timeout_and_a_healed_one_carries_again() {
    let (outcome, served) = run(
        |endpoint| {
            Box::pin(async move {
                let cut = ping(&endpoint, 1, Duration::from_millis(50)).await;
                madsim::time::sleep(Duration::from_millis(100)).await;
                vec![cut, ping(&endpoint, 2, Duration::from_millis(50)).await]
            })
        },
        |server, client| {
            Box::pin(async move {
                net::clog_link(client, server);
                madsim::time::sleep(Duration::from_millis(100)).await;
                net::unclog_link(client, server);
            })
        },
    );
    assert_eq!(outcome[0].0, Err(std::io::ErrorKind::TimedOut));
    assert!(outcome[0].1 >= Duration::from_millis(50));
    assert_eq!(outcome[1].0, Ok(3));
    assert_eq!(served, 1, "the request on the cut link never arrived");
}

/// Pauses the server from 0.5 ms (after it has bound, its first poll; before the client calls,
/// at 1 ms) to 500.5 ms.
fn pause_the_server(server: NodeId, _: NodeId) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(async move {
        net::sleep_until_exact(Instant::now() + Duration::from_micros(500)).await;
        Handle::current().pause(server);
        madsim::time::sleep(Duration::from_millis(500)).await;
        Handle::current().resume(server);
    })
}

#[test]
fn a_paused_server_answers_what_arrived_during_the_pause_when_it_resumes() {
    let (outcome, served) = run(
        |endpoint| Box::pin(async move { vec![ping(&endpoint, 7, Duration::from_secs(5)).await] }),
        pause_the_server,
    );
    assert_eq!(outcome[0].0, Ok(8));
    assert_eq!(served, 1);
    // Sent at 1 ms, held until the resume at 500.5 ms, answered one latency later.
    assert!(
        outcome[0].1 >= Duration::from_millis(499) && outcome[0].1 < Duration::from_millis(500),
        "{:?}",
        outcome[0].1
    );
}

/// Two pings sent while the server is paused: the first gives up after 100 ms, the second waits.
fn two_pings_across_a_pause(serve: Serve) -> (Outcome, Vec<u64>) {
    let exact = LinkLatency::Uniform { min: LATENCY, max: LATENCY };
    run_on(
        1,
        exact,
        serve,
        |endpoint| {
            Box::pin(async move {
                let impatient = ping(&endpoint, 1, Duration::from_millis(100));
                let patient = ping(&endpoint, 2, Duration::from_secs(5));
                let (a, b) = futures::future::join(impatient, patient).await;
                vec![a, b]
            })
        },
        pause_the_server,
    )
}

#[test]
fn a_call_its_caller_gave_up_on_is_not_served_but_a_raft_message_is() {
    let (outcome, taken) = two_pings_across_a_pause(Serve::Calls);
    assert_eq!(outcome[0].0, Err(std::io::ErrorKind::TimedOut));
    assert_eq!(outcome[1].0, Ok(3));
    assert_eq!(taken, vec![2], "the abandoned call was served");
    // A peer message (add_rpc_handler) is served whenever it arrives, its sender waiting or not.
    let (outcome, taken) = two_pings_across_a_pause(Serve::Rpc);
    assert_eq!(outcome[0].0, Err(std::io::ErrorKind::TimedOut));
    assert_eq!(taken, vec![1, 2]);
}

#[test]
fn a_dropped_reply_times_the_caller_out_but_the_request_took_effect() {
    let (outcome, served) = run(
        |endpoint| Box::pin(async move { vec![ping(&endpoint, 1, Duration::from_millis(50)).await] }),
        |_, client| {
            Box::pin(async move {
                net::filter_replies_to::<u64>(client, |_| false);
            })
        },
    );
    assert_eq!(outcome[0].0, Err(std::io::ErrorKind::TimedOut));
    assert_eq!(served, 1);
}

/// The order in which the server took 100 pings that the client sent at once, 10 µs apart, on
/// links whose latency is drawn between 10 µs and 5 ms for each message.
fn arrival_order(ordered: bool) -> Vec<u64> {
    let latency = LinkLatency::Uniform { min: Duration::from_micros(10), max: Duration::from_millis(5) };
    let script = move |endpoint: Endpoint| -> futures::future::BoxFuture<'static, Outcome> {
        Box::pin(async move {
            let mut calls = Vec::new();
            for n in 0..100 {
                let endpoint = endpoint.clone();
                calls.push(madsim::task::spawn(async move {
                    let timeout = Duration::from_secs(1);
                    match ordered {
                        true => endpoint.call_ordered(SERVER, Ping(n), timeout).await,
                        false => endpoint.call(SERVER, Ping(n), timeout).await,
                    }
                }));
                net::sleep_until_exact(Instant::now() + Duration::from_micros(10)).await;
            }
            for call in calls {
                call.await.expect("the call's task ends").expect("no fault: every ping is answered");
            }
            Outcome::new()
        })
    };
    run_on(7, latency, Serve::Rpc, script, no_faults).1
}

#[test]
fn ordered_calls_arrive_in_the_order_they_were_sent_and_plain_ones_need_not() {
    let in_order: Vec<u64> = (0..100).collect();
    assert_eq!(arrival_order(true), in_order, "an ordered stream, as on one TCP connection");
    // Without the order, latencies drawn per message overtake each other: the check above is
    // not met by chance.
    assert_ne!(arrival_order(false), in_order);
}

/// A request for `Fetch(n)`: answered with n bytes.
#[derive(Serialize, Deserialize)]
struct Fetch(u64);

impl Request for Fetch {
    type Response = Vec<u8>;
    const ID: u64 = 0x4645_5443;
}

/// Bytes in a `Fetch` answer's payload so that the answer is `bytes` on the wire: bincode
/// writes a vector's length in 8 bytes, and the network adds its framing.
fn payload_for_wire(bytes: u64) -> u64 {
    bytes - 8 - coordsim_core::timing::MESSAGE_FRAMING_BYTES
}

/// One server on links of exactly [`LATENCY`] and a node capacity of `bandwidth`; client `i`
/// fetches `sizes[i]` bytes at the same instant as the others, each from a node of its own.
/// Returns how long each fetch took.
fn fetch_at_once(bandwidth: &str, sizes: &[u64]) -> Vec<Duration> {
    let bandwidth = coordsim_core::timing::Bandwidth::parse(bandwidth).expect("a bandwidth");
    let sizes = sizes.to_vec();
    Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(async move {
        let epoch = Instant::now();
        let _nodes = node::install(epoch);
        let exact = LinkLatency::Uniform { min: LATENCY, max: LATENCY };
        net::install(Links { latency: exact, peer: None, bandwidth: Some(bandwidth) });
        let handle = Handle::current();
        let server = handle
            .create_node()
            .name("s1")
            .ip(SERVER.ip())
            .init(|| async move {
                let endpoint = Endpoint::bind(SERVER).await.expect("the server binds");
                endpoint.add_rpc_handler(|Fetch(n)| async move { vec![7u8; n as usize] });
                futures::future::pending::<()>().await;
            })
            .build();
        node::bind(server.id(), "s1", Clock::true_time(epoch));
        let mut fetches = Vec::new();
        for (i, size) in sizes.into_iter().enumerate() {
            let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1 + i as u8));
            let name = format!("c{}", i + 1);
            let client = handle.create_node().name(&name).ip(ip).build();
            node::bind(client.id(), &name, Clock::true_time(epoch));
            fetches.push(client.spawn(async move {
                madsim::time::sleep(Duration::from_millis(1)).await;
                let endpoint = Endpoint::bind(SocketAddr::new(ip, 7000)).await.expect("the client binds");
                let start = Instant::now();
                endpoint.call(SERVER, Fetch(size), Duration::from_secs(10)).await.expect("an answer");
                start.elapsed()
            }));
        }
        let mut took = Vec::new();
        for fetch in fetches {
            took.push(fetch.await.expect("the fetch ends"));
        }
        took
    })
}

/// `a` is within 2 % of `b`.
fn close(a: Duration, b: Duration) -> bool {
    a.abs_diff(b) <= b / 50
}

#[test]
fn a_message_takes_its_size_over_the_bandwidth_before_its_latency() {
    // 8 Mbit/s is a byte a microsecond: a 100,000-byte answer goes out in 100 ms.
    let took = fetch_at_once("8Mbit/s", &[payload_for_wire(100_000)]);
    let request = Duration::from_micros(8 + coordsim_core::timing::MESSAGE_FRAMING_BYTES);
    let expected = Duration::from_millis(100) + request + 2 * LATENCY;
    // madsim's timers add a few hundred nanoseconds.
    assert!(took[0] >= expected && took[0] < expected + Duration::from_micros(5), "took {:?}", took[0]);
}

#[test]
fn a_fan_out_drains_at_the_senders_capacity_and_a_small_answer_is_not_held_behind_it() {
    // Four answers of 100 kB at once (a watch event to four watchers): together they take
    // 400 ms to go out, whichever goes first; a small answer sent beside them on a connection
    // of its own takes its share of the capacity, not the 400 ms queued before it (FIFO).
    let big = payload_for_wire(100_000);
    let took = fetch_at_once("8Mbit/s", &[big, big, big, big, 0]);
    let mut bulk = took[..4].to_vec();
    bulk.sort();
    let ms = Duration::from_millis;
    let expected = [ms(100), ms(200), ms(300), ms(400)];
    for (got, want) in bulk.iter().zip(expected) {
        assert!(close(*got, want), "the fan-out's answers took {bulk:?}, expected about {expected:?}");
    }
    assert!(took[4] < ms(2), "a small answer took {:?} beside the fan-out", took[4]);
}

#[test]
fn without_a_bandwidth_size_costs_nothing() {
    let exact = LinkLatency::Uniform { min: LATENCY, max: LATENCY };
    let (outcome, _) = run_on(
        1,
        exact,
        Serve::Rpc,
        |endpoint| Box::pin(async move { vec![ping(&endpoint, 1, Duration::from_secs(1)).await] }),
        no_faults,
    );
    assert!(outcome[0].1 >= 2 * LATENCY && outcome[0].1 < 2 * LATENCY + Duration::from_micros(5));
}

//! The link proxy of a real run with delays, in real network namespaces: a connection c1 opens to
//! s1 is redirected to c1's proxy, goes on to s1, and takes the delays the proxy is given (one
//! way, then the other). Needs root and nftables; says so and passes vacuously elsewhere (CI runs
//! as root: `.ci/run`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use coordsim_real::links::MARK;
use coordsim_real::netns::Network;
use coordsim_real::proxy::{Delay, LinkState, Links};

/// Moves this thread into `ns` (its sockets are made there from now on).
fn enter(ns: &str) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("the namespace's file");
    // SAFETY: setns on a valid namespace fd affects only the calling thread.
    assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns {ns}");
}

fn round_trip(stream: &mut TcpStream) -> Duration {
    let start = Instant::now();
    stream.write_all(b"x").unwrap();
    let mut byte = [0u8; 1];
    stream.read_exact(&mut byte).unwrap();
    start.elapsed()
}

#[test]
fn a_redirected_connection_takes_each_ways_delay() {
    if let Some(reason) = coordsim_real::netns::unavailable() {
        eprintln!("skipped: {reason}");
        return;
    }
    let nodes = vec!["s1".to_string(), "c1".to_string()];
    let net = Network::create(&nodes).unwrap();
    let (s1_ns, c1_ns) = (net.namespace("s1").unwrap().to_string(), net.namespace("c1").unwrap().to_string());
    let s1_ip = net.ip("s1");

    // An echo server in s1's namespace.
    let (ready, listening) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        enter(&s1_ns);
        let listener = TcpListener::bind(SocketAddr::from((s1_ip, 7000))).unwrap();
        ready.send(()).unwrap();
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = stream.read(&mut buf) {
                    stream.write_all(&buf[..n]).unwrap();
                }
            });
        }
    });
    listening.recv().unwrap();

    // c1's proxy, in c1's namespace.
    let links = Links::default();
    let proxy_links = links.clone();
    let proxy_ns = c1_ns.clone();
    let (ready, bound) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        enter(&proxy_ns);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ready.send(listener.local_addr().unwrap().port()).unwrap();
            coordsim_real::proxy::serve_transparent(listener, proxy_links, MARK, None).await;
        });
    });
    net.redirect("c1", bound.recv().unwrap(), MARK).unwrap();

    let ms = Duration::from_millis;
    let (result, done) = std::sync::mpsc::channel();
    let set = move |request: Duration, reply: Duration| {
        let state = LinkState {
            request_delay: Delay::fixed(request),
            reply_delay: Delay::fixed(reply),
            ..LinkState::default()
        };
        links.set(s1_ip, state);
    };
    std::thread::spawn(move || {
        enter(&c1_ns);
        let mut stream = TcpStream::connect(SocketAddr::from((s1_ip, 7000))).unwrap();
        stream.set_nodelay(true).unwrap();
        let quiet = round_trip(&mut stream);
        set(ms(150), ms(0));
        let requests_slow = round_trip(&mut stream);
        set(ms(0), ms(250));
        let replies_slow = round_trip(&mut stream);
        result.send((quiet, requests_slow, replies_slow)).unwrap();
    });
    let (quiet, requests_slow, replies_slow) = done.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(quiet < ms(100), "no delay: {quiet:?}");
    assert!((ms(150)..ms(250)).contains(&requests_slow), "150 ms to the server: {requests_slow:?}");
    assert!((ms(250)..ms(350)).contains(&replies_slow), "250 ms back: {replies_slow:?}");
    // Without the redirect the bytes would go straight to s1 and the delays would not show.
}

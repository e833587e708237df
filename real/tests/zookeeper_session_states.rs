//! The session states of the real zookeeper-client crate on a real ensemble, for a client cut off
//! from every server: the script of the simulator's
//! `a_cut_off_client_gives_its_connection_up_and_expires_its_session_on_the_crates_timers`
//! (scenarios/tests/user_zookeeper_api.rs), with the same expected outcome, so that the simulated
//! client's timers are checked against the crate they mirror.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use coordsim_real::System;
use coordsim_real::testbed::RealTestbed;
use zookeeper_client::{Client, Error};

#[test]
fn a_cut_off_client_gives_its_connection_up_and_expires_its_session_on_the_crates_timers() {
    let log = Rc::new(RefCell::new(Vec::<String>::new()));
    let shared = log.clone();
    RealTestbed::new("zk-session-states-real", System::Zookeeper)
        .duration(Duration::from_secs(19))
        .partition_clients(&["c1"], Duration::from_secs(5), Duration::from_secs(10))
        .run(1, move |ctx| {
            let log = shared.clone();
            async move {
                let note = |line: String| log.borrow_mut().push(line);
                let zk = Client::connector()
                    .with_session_timeout(Duration::from_secs(4))
                    .connect(&ctx.zookeeper_cluster())
                    .await
                    .expect("a session");
                let seconds = || ctx.monotonic_now().as_secs_f64();
                let mut last_answer = 0.0;
                let in_flight = loop {
                    match zk.get_data("/absent").await {
                        Err(Error::NoNode) => last_answer = seconds(),
                        other => break other.err(),
                    }
                    ctx.sleep(Duration::from_millis(100)).await;
                };
                let lost = seconds() - last_answer;
                note(format!("in flight: {}", matches!(in_flight, Some(Error::Custom(_)))));
                // The crate checks its timeout on each tick (1/20 of the session): up to 200 ms late.
                note(format!("{:?} after {}", zk.state(), (1.5..=1.85).contains(&lost)));
                let waited = zk.get_data("/absent").await.err();
                let expired = seconds() - last_answer;
                // 5.6 s in a real partition, where the last attempt's connect ends at the deadline;
                // through the test's proxy the connection opens and the attempt runs its full
                // 1.6 s, to 6.4 s (see real/src/proxy.rs).
                note(format!("{waited:?} {:?} after {}", zk.state(), (5.5..=6.6).contains(&expired)));
                eprintln!("connection given up {lost:.3} s and session expired {expired:.3} s after the last answer");
                ctx.sleep(Duration::from_secs(6)).await;
                note(format!("{:?}", zk.get_data("/absent").await.err()));
                note("done".into());
            }
        })
        .expect("the run on real ZooKeeper");
    assert_eq!(
        *log.borrow(),
        [
            "in flight: true",
            "Disconnected after true",
            "Some(SessionExpired) Expired after true",
            "Some(SessionExpired)",
            "done"
        ]
    );
}

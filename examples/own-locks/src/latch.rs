//! Curator's LeaderLatch written out on zookeeper-client (Curator 5.x, `LeaderLatch.java`): each
//! candidate creates an ephemeral sequential node under the latch's path; the candidate whose
//! node sorts first leads; every other one watches the node just before its own and looks again
//! when it goes. The leader's node's czxid is its fencing token.
//!
//! Two variants of what the leader does when its connection goes:
//! - [`Variant::StepsDownWhenSuspended`]: Curator's default (`StandardConnectionStateErrorPolicy`:
//!   SUSPENDED is an error state), leadership ends the moment the session is not connected,
//!   watched while the leader works, since the ensemble may expire the session while the client
//!   cannot hear it.
//! - [`Variant::StepsDownWhenLost`]: Curator's `SessionConnectionStateErrorPolicy` (only LOST
//!   is an error state) used for a latch that guards writes: the leader goes on leading while
//!   disconnected, and the client learns that its session expired only once it hears from a
//!   server, or 7/5 of the timeout after it last did, well after the ensemble expired the session
//!   and made a successor leader.

use std::future::Future;
use std::time::Duration;

use crate::zookeeper_client::{Acls, Client, CreateMode, Error, SessionState, StateWatcher};
use crate::{Effects, time};

/// The latch's path: its candidates are the children.
pub const LATCH: &str = "/own/latch";
/// Each candidate's session timeout.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// Time between the leader's writes.
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// When leadership ends; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    StepsDownWhenSuspended,
    StepsDownWhenLost,
}

/// Runs one candidate for ever: a session, a node in the latch, leadership when it comes.
pub async fn run_candidate(cluster: String, name: String, variant: Variant, effects: impl Effects) {
    loop {
        let connected = Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&cluster).await;
        if let Ok(zk) = connected {
            let _ = one_session(&zk, &name, variant, &effects).await;
            zk.close();
        }
        time::sleep(Duration::from_secs(1)).await;
    }
}

/// One session: join the latch, wait to lead, lead until the variant says stop.
async fn one_session(zk: &Client, name: &str, variant: Variant, effects: &impl Effects) -> Result<(), Error> {
    for path in ["/own", LATCH] {
        match zk.create(path, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
    }
    let sequential = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (stat, sequence) = zk.create(&format!("{LATCH}/n-"), name.as_bytes(), &sequential).await?;
    let ours = format!("n-{sequence}");
    let token = stat.czxid;
    let mut states = zk.state_watcher();
    // Wait until our node sorts first.
    loop {
        let mut candidates = zk.list_children(LATCH).await?;
        candidates.sort();
        let Some(position) = candidates.iter().position(|c| *c == ours) else {
            return Err(Error::NoNode); // our node went with our session
        };
        if position == 0 {
            break;
        }
        let predecessor = format!("{LATCH}/{}", candidates[position - 1]);
        let (found, watcher) = zk.check_and_watch_stat(&predecessor).await?;
        if found.is_some() {
            watcher.changed().await;
        }
    }
    effects.holding(LATCH, token);
    let mut writes = 0u64;
    let reason = loop {
        let state = zk.state();
        if state.is_terminated() {
            break "session expired";
        }
        if variant == Variant::StepsDownWhenSuspended && state != SessionState::SyncConnected {
            break "suspended";
        }
        writes += 1;
        let work = async {
            effects.write(token, format!("{name}-{token}-{writes}")).await;
            time::sleep(WORK_EVERY).await;
        };
        match variant {
            Variant::StepsDownWhenSuspended => {
                if first_of(work, until_not_connected(&mut states)).await.is_none() {
                    break "suspended";
                }
            }
            Variant::StepsDownWhenLost => work.await,
        }
    };
    effects.released(LATCH, token, reason);
    Ok(())
}

/// Returns once the session is not connected.
async fn until_not_connected(states: &mut StateWatcher) {
    while states.state() == SessionState::SyncConnected {
        states.changed().await;
    }
}

/// `Some(output)` if `future` finishes first, `None` if `other` does.
async fn first_of<F: Future, G: Future<Output = ()>>(future: F, other: G) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut other = std::pin::pin!(other);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        other.as_mut().poll(cx).map(|()| None)
    })
    .await
}

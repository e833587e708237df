//! CURATOR-460: a LeaderLatch whose leader gives up leadership only on LOST, not on SUSPENDED
//! (Curator 3's "timed tolerance": LOST comes from the client's own timer once the session
//! timeout has passed without a connection). The ensemble expires the session on its side, the
//! next candidate's node sorts first and it leads, while the old leader, still only SUSPENDED,
//! leads too. The fix is Curator's default: SUSPENDED ends leadership at once (a leader that
//! cannot hear the ensemble cannot know whether it still leads).

use std::future::Future;
use std::time::Duration;

use crate::zookeeper_client::{Acls, Client, CreateMode, Error, SessionState, StateWatcher};
use crate::{Effects, first_of, time, zookeeper_sessions};

pub const LATCH: &str = "/latch";
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// Runs one candidate for ever. `fixed`: leadership ends when the session is suspended.
pub async fn run(cluster: String, name: String, fixed: bool, effects: impl Effects) {
    zookeeper_sessions(&cluster, SESSION_TIMEOUT, |zk| {
        let (name, effects) = (name.clone(), effects.clone());
        async move {
            let _ = one_session(&zk, &name, fixed, &effects).await;
        }
    })
    .await;
}

async fn one_session(zk: &Client, name: &str, fixed: bool, effects: &impl Effects) -> Result<(), Error> {
    match zk.create(LATCH, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error),
    }
    let sequential = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (stat, sequence) = zk.create(&format!("{LATCH}/n-"), name.as_bytes(), &sequential).await?;
    let ours = format!("n-{sequence}");
    let mut states = zk.state_watcher();
    loop {
        let mut candidates = zk.list_children(LATCH).await?;
        candidates.sort();
        let position = candidates.iter().position(|c| *c == ours).ok_or(Error::NoNode)?;
        if position == 0 {
            break;
        }
        let (found, watcher) = zk.check_and_watch_stat(&format!("{LATCH}/{}", candidates[position - 1])).await?;
        if found.is_some() {
            watcher.changed().await;
        }
    }
    let token = stat.czxid;
    effects.holding(LATCH, token);
    let mut writes = 0u64;
    let reason = loop {
        let state = zk.state();
        if state.is_terminated() {
            break "lost";
        }
        if fixed && state != SessionState::SyncConnected {
            break "suspended";
        }
        writes += 1;
        let work = async {
            effects.write(token, format!("{name}-{token}-{writes}")).await;
            time::sleep(WORK_EVERY).await;
        };
        if fixed {
            if first_of(work, until_not_connected(&mut states)).await.is_none() {
                break "suspended";
            }
        } else {
            work.await;
        }
    };
    effects.released(LATCH, token, reason);
    Ok(())
}

fn until_not_connected(states: &mut StateWatcher) -> impl Future<Output = ()> + '_ {
    async move {
        while states.state() == SessionState::SyncConnected {
            states.changed().await;
        }
    }
}

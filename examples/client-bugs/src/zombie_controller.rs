//! KAFKA-3083: a Kafka controller elected through the ephemeral `/controller` znode is cut off
//! from ZooKeeper; its session expires on the ensemble, another broker becomes controller with a
//! higher controller epoch, and the old one (a zombie: it has not heard that its session ended)
//! goes on writing partition state. Writes that the state store accepts whatever their epoch let
//! the zombie overwrite its successor's decisions. The fix (KIP-380 and the controller-epoch
//! checks around it) fences every write with the controller epoch: the store refuses one from an
//! older epoch, and a controller that is refused resigns.

use std::time::Duration;

use crate::zookeeper_client::{Acls, Client, CreateMode, Error};
use crate::{Effects, time, zookeeper_sessions};

pub const CONTROLLER: &str = "/controller";
pub const EPOCH: &str = "/controller_epoch";
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
pub const WORK_EVERY: Duration = Duration::from_millis(200);

/// Runs one broker for ever: a session, the controller election, the controller's writes.
/// `fixed`: a write the store refuses (a newer epoch wrote) makes the controller resign.
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
    match zk.create(EPOCH, b"0", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error),
    }
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    loop {
        match zk.create(CONTROLLER, name.as_bytes(), &ephemeral).await {
            Ok(_) => break,
            Err(Error::NodeExists) => {
                let (found, watcher) = zk.check_and_watch_stat(CONTROLLER).await?;
                if found.is_some() {
                    watcher.changed().await;
                }
            }
            Err(error) => return Err(error),
        }
    }
    // Elected: the next controller epoch, written with the version read (a conditional write).
    let (data, stat) = zk.get_data(EPOCH).await?;
    let epoch = String::from_utf8_lossy(&data).parse::<i64>().unwrap_or(0) + 1;
    zk.set_data(EPOCH, epoch.to_string().as_bytes(), Some(stat.version)).await?;
    effects.holding(CONTROLLER, epoch);
    let mut writes = 0u64;
    let reason = loop {
        if zk.state().is_terminated() {
            break "session expired";
        }
        writes += 1;
        let accepted = effects.write(epoch, format!("{name}-epoch-{epoch}-{writes}")).await;
        if fixed && !accepted {
            break "a newer controller epoch wrote";
        }
        time::sleep(WORK_EVERY).await;
    };
    effects.released(CONTROLLER, epoch, reason);
    let _ = zk.delete(CONTROLLER, None).await;
    Ok(())
}

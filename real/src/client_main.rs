//! `coordsim real-client --config <file>`: one client process of a real run.

use std::path::Path;
use std::sync::Arc;

use crate::config::{ClientConfig, System, Workload};
use crate::etcd::EtcdBackend;
use crate::journal::Journal;
use crate::workload;
use crate::zk::ZkBackend;

/// Reads the configuration, runs the workload until its stop time, exits.
pub fn main(config_path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(config_path).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let config: ClientConfig =
        serde_json::from_str(&text).map_err(|e| format!("{}: line {}: {e}", config_path.display(), e.line()))?;
    let journal = Journal::create(&config.journal, config.epoch_ns, config.op_base)
        .map_err(|e| format!("{}: {e}", config.journal.display()))?;
    let journal = Arc::new(journal);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let stop = workload::sleep_until(&journal, config.stop_ns);
        let lock = match &config.workload {
            Workload::Lock(lock) => lock,
            Workload::Kv(kv) => {
                return tokio::select! {
                    done = crate::kv::run(&config, kv, journal.clone()) => done,
                    () = stop => Ok(()),
                };
            }
        };
        match config.system {
            System::Etcd => {
                let work = async {
                    // No member may answer yet (a partition, a crash): try again until one does.
                    let mut backend = loop {
                        match EtcdBackend::connect(&config, lock, journal.clone()).await {
                            Ok(backend) => break backend,
                            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                        }
                    };
                    workload::run(&config, lock, &mut backend, &journal).await
                };
                tokio::select! {
                    () = work => {}
                    () = stop => {}
                }
            }
            System::Zookeeper => {
                let mut backend = ZkBackend::new(&config, lock, journal.clone());
                tokio::select! {
                    () = workload::run(&config, lock, &mut backend, &journal) => {}
                    () = stop => {}
                }
            }
        }
        Ok::<(), String>(())
    })?;
    // Background tasks (keepalives, the ZooKeeper connection) end with the process.
    std::process::exit(0)
}

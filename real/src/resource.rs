//! The protected resource over TCP: the simulator's [`Resource`] core (fenced or unfenced) behind
//! a line protocol, run as a process of its own (`coordsim real-resource --config <file>`), and
//! the client side that writes to it.
//!
//! Request: `{"client":"c1","token":7,"value":"c1-3"}\n`; reply: `{"accepted":true,"highest":7}\n`
//! (`highest`: the highest token accepted before this write). The server records every decision
//! in the orchestrator's journal as a `resource` event, exactly as the simulated resource does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordsim_checker::history::{Call, Event, Return};
use coordsim_sim::resource::{Resource, ResourceMode};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::journal::Journal;

/// How long a write may take before its outcome counts as unknown (the simulator's
/// `RESOURCE_TIMEOUT`).
pub const RESOURCE_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Debug, Serialize, Deserialize)]
struct WriteRequest {
    client: String,
    token: i64,
    value: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct WriteReply {
    accepted: bool,
    highest: i64,
}

/// What the orchestrator tells the resource process.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfig {
    /// Its node name in the history.
    pub name: String,
    pub mode: ResourceMode,
    /// `IP:PORT` to listen on.
    pub listen: String,
    /// `CLOCK_MONOTONIC` at the run's start, in ns.
    pub epoch_ns: u64,
    pub journal: std::path::PathBuf,
}

/// `coordsim real-resource --config <file>`: serves until killed.
pub fn main(config_path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(config_path).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let config: ResourceConfig =
        serde_json::from_str(&text).map_err(|e| format!("{}: line {}: {e}", config_path.display(), e.line()))?;
    let journal = Journal::create(&config.journal, config.epoch_ns, 0)
        .map_err(|e| format!("{}: {e}", config.journal.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let listener = TcpListener::bind(&config.listen).await.map_err(|e| format!("{}: {e}", config.listen))?;
        serve(listener, config.name.clone(), config.mode, Arc::new(journal)).await;
        Ok(())
    })
}

/// Serves writes on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, name: String, mode: ResourceMode, journal: Arc<Journal>) {
    let resource = Arc::new(Mutex::new(Resource::new(mode)));
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (resource, name, journal) = (resource.clone(), name.clone(), journal.clone());
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(request) = serde_json::from_str::<WriteRequest>(&line) else { break };
                // Decide and record under one lock, so the journal's order is the decision order.
                let decision = {
                    let mut resource = resource.lock().expect("resource lock poisoned");
                    let decision = resource.write(request.token);
                    journal.record(
                        &name,
                        Event::Resource {
                            resource: name.clone(),
                            client: request.client.clone(),
                            token: request.token,
                            value: request.value.clone(),
                            accepted: decision.accepted,
                            highest_before: decision.highest_before,
                        },
                    );
                    decision
                };
                let reply = WriteReply { accepted: decision.accepted, highest: decision.highest_before };
                let mut text = serde_json::to_string(&reply).expect("replies serialize");
                text.push('\n');
                if write.write_all(text.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// A client's connection to the resource, opened again after any error.
pub struct ResourceClient {
    addr: String,
    resource: String,
    conn: Option<BufReader<TcpStream>>,
}

impl ResourceClient {
    pub fn new(resource: &str, addr: &str) -> Self {
        ResourceClient { addr: addr.to_string(), resource: resource.to_string(), conn: None }
    }

    /// One recorded write: `Some(accepted)`, or `None` when the outcome is unknown.
    pub async fn write(&mut self, journal: &Journal, node: &str, token: i64, value: String) -> Option<bool> {
        let call = Call::Write { resource: self.resource.clone(), token, value: value.clone() };
        let op = journal.invoke(node, call);
        let request = WriteRequest { client: node.to_string(), token, value };
        match tokio::time::timeout(RESOURCE_TIMEOUT, self.send(&request)).await {
            Ok(Ok(reply)) if reply.accepted => {
                journal.ok(node, op, Return::Written);
                Some(true)
            }
            Ok(Ok(reply)) => {
                journal.fail(node, op, format!("rejected: token {token} is below {}", reply.highest));
                Some(false)
            }
            Ok(Err(error)) => {
                self.conn = None;
                journal.info(node, op, error.to_string());
                None
            }
            Err(_) => {
                self.conn = None;
                journal.info(node, op, "the resource did not answer in time");
                None
            }
        }
    }

    async fn send(&mut self, request: &WriteRequest) -> std::io::Result<WriteReply> {
        if self.conn.is_none() {
            self.conn = Some(BufReader::new(TcpStream::connect(&self.addr).await?));
        }
        let conn = self.conn.as_mut().expect("connected above");
        let mut text = serde_json::to_string(request).expect("requests serialize");
        text.push('\n');
        conn.get_mut().write_all(text.as_bytes()).await?;
        let mut line = String::new();
        if conn.read_line(&mut line).await? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the resource closed the connection"));
        }
        serde_json::from_str(&line).map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
    }
}

//! A real ZooKeeper ensemble (Debian's `zookeeper`, 3.8 here) of N servers on 127.0.0.1, each a
//! JVM started with our own configuration: the packaged scripts read /etc and write /var, and
//! the admin server must stay off (it would bind 0.0.0.0:8080).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use super::{Cluster, Hosts, START_TIMEOUT};
use crate::procs::Procs;
use coordsim_checker::history::ServiceTiming;

/// The port a server listens to clients on: ZooKeeper's usual one (in a run's namespaces; on
/// 127.0.0.1 a free port instead). The link proxies read connections to it as ZooKeeper's
/// protocol (real/src/zk_frames.rs).
pub const CLIENT_PORT: u16 = 2181;

pub const JAVA: &str = "/usr/bin/java";
/// The server jar; its manifest's Class-Path names every dependency under /usr/share/java.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
pub const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";
/// ZooKeeper's tick: sessions may last 2 to 20 ticks, so 1 s to 10 s here.
pub const TICK_MS: u64 = 500;

/// `syncLimit`: a follower that has not heard its leader for this many ticks gives it up and
/// looks for a new one (`Learner`'s socket timeout); a leader not heard by a quorum as long
/// steps down.
pub const SYNC_LIMIT_TICKS: u64 = 5;

/// The ensemble's timing as a history's header carries it, for the lease checkers, read in
/// ZooKeeper 3.8's code:
/// - a leader pings its followers every half tick (`Leader.lead`); a follower gives its leader
///   up after `syncLimit` ticks without hearing it (`Learner`'s socket timeout), whatever the
///   draw: one election timeout, not a range;
/// - the leader's session tracker expires sessions in buckets of one tick (`ExpiryQueue`,
///   `roundToNextInterval`): up to a tick after a session's timeout;
/// - a new leader's tracker starts every session over at its full timeout when it starts
///   (`SessionTrackerImpl`'s constructor touches each session of the database), adding nothing;
/// - a follower answers a ping itself and reports its clients' touches to the leader in its
///   reply to the leader's next ping (`LearnerSessionTracker`, `Learner.ping`): up to half a tick
///   after the client's answer.
pub fn service_timing() -> ServiceTiming {
    ServiceTiming {
        heartbeat_ms: TICK_MS / 2,
        election_timeout_min_ms: TICK_MS * SYNC_LIMIT_TICKS,
        election_timeout_max_ms: TICK_MS * SYNC_LIMIT_TICKS,
        lease_expiry_tick_ms: TICK_MS,
        lease_promotion_extend_ms: 0,
        renewal_relay_ms: TICK_MS / 2,
    }
}

struct Server {
    name: String,
    ip: String,
    client_port: u16,
    config: PathBuf,
    log: PathBuf,
}

pub struct ZkEnsemble {
    servers: Vec<Server>,
    procs: Arc<Procs>,
    hosts: Hosts,
}

impl ZkEnsemble {
    /// Writes each server's configuration under `dir`, starts them and waits until every one
    /// serves (`srvr` answers with a mode) and one leads (or the single server is standalone).
    pub async fn start(dir: &Path, count: usize, procs: Arc<Procs>, hosts: Hosts) -> Result<ZkEnsemble, String> {
        let mut ports = Vec::new();
        for _ in 0..count {
            ports.push((hosts.port(CLIENT_PORT)?, hosts.port(2888)?, hosts.port(3888)?));
        }
        let peers: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, quorum, election))| {
                format!("server.{}={}:{quorum}:{election}\n", i + 1, hosts.ip(&format!("s{}", i + 1)))
            })
            .collect();
        let mut servers = Vec::new();
        for (i, (client_port, _, _)) in ports.iter().enumerate() {
            let name = format!("s{}", i + 1);
            let data = dir.join(format!("{name}.data"));
            std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).map_err(|e| e.to_string())?;
            let mut text = format!(
                "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit={SYNC_LIMIT_TICKS}\ndataDir={}\nclientPort={client_port}\n\
                 clientPortAddress={}\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,dump,mntr\n",
                data.display(),
                hosts.ip(&name),
            );
            if count > 1 {
                text.push_str(&peers);
            }
            let config = dir.join(format!("{name}.cfg"));
            std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
            servers.push(Server {
                log: dir.join(format!("{name}.log")),
                ip: hosts.ip(&name),
                name,
                client_port: *client_port,
                config,
            });
        }
        let mut ensemble = ZkEnsemble { servers, procs, hosts };
        for i in 0..ensemble.servers.len() {
            ensemble.launch(i)?;
        }
        ensemble.wait_ready().await?;
        Ok(ensemble)
    }

    fn launch(&mut self, index: usize) -> Result<(), String> {
        let s = &self.servers[index];
        let mut command = Command::new(JAVA);
        command
            .args(["-Xmx256m", "-XX:+UseSerialGC", "-Dzookeeper.admin.enableServer=false"])
            // slf4j-simple (Debian libslf4j-java, which zookeeper depends on) gives the server a
            // log on stderr: without a binding slf4j drops every line.
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .args([
                "-cp",
                &format!("{ZOOKEEPER_JAR}:{SLF4J_SIMPLE_JAR}"),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(&s.config);
        let command = self.hosts.command(&s.name, command);
        self.procs.spawn(&s.name, command, &s.log)?;
        Ok(())
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            for s in &self.servers {
                if let Some(status) = self.procs.exited(&s.name) {
                    return Err(format!("ZooKeeper server {} exited ({status}); see {}", s.name, s.log.display()));
                }
            }
            let mut modes: Vec<Option<String>> = Vec::new();
            for s in &self.servers {
                modes.push(mode(&s.ip, s.client_port).await);
            }
            let serving = modes.iter().all(Option::is_some);
            let led = modes.iter().flatten().any(|m| m == "leader" || m == "standalone");
            if serving && led {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("the ZooKeeper ensemble did not serve within {START_TIMEOUT:?} (modes {modes:?})"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The answer to a four-letter word, or `None` after 150 ms (a paused server answers nothing).
async fn four_letter(ip: &str, port: u16, word: &[u8]) -> Option<String> {
    four_letter_within(ip, port, word, Duration::from_millis(150)).await
}

async fn four_letter_within(ip: &str, port: u16, word: &[u8], within: Duration) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect((ip, port)).await.ok()?;
        stream.write_all(word).await.ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        Some(text)
    };
    tokio::time::timeout(within, ask).await.ok().flatten()
}

impl ZkEnsemble {
    /// The first server whose mode is one of `modes`.
    async fn leading(&self, modes: &[&str]) -> Option<&Server> {
        for server in &self.servers {
            if mode(&server.ip, server.client_port).await.is_some_and(|m| modes.contains(&m.as_str())) {
                return Some(server);
            }
        }
        None
    }
}

/// The server's mode by the `srvr` four-letter word: leader, follower or standalone.
async fn mode(ip: &str, port: u16) -> Option<String> {
    let text = four_letter(ip, port, b"srvr").await?;
    text.lines().find_map(|line| line.strip_prefix("Mode: ").map(|m| m.trim().to_string()))
}

/// The live sessions in a `dump` answer: the session tracker's section (on the leader, or a
/// standalone server) lists every session id, in hex, under its expiry bucket.
pub fn sessions_in_dump(text: &str) -> Option<std::collections::BTreeSet<i64>> {
    let start = text.find("SessionTracker dump:")?;
    let end = text[start..].find("ephemeral nodes dump:").map_or(text.len(), |i| start + i);
    let sessions = text[start..end]
        .lines()
        .filter_map(|line| line.trim().strip_prefix("0x"))
        .filter_map(|hex| u64::from_str_radix(hex.trim_end_matches(':'), 16).ok())
        .map(|id| id as i64)
        .collect();
    Some(sessions)
}

impl Cluster for ZkEnsemble {
    fn servers(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }

    fn client_endpoints(&self) -> Vec<String> {
        self.servers.iter().map(|s| format!("{}:{}", s.ip, s.client_port)).collect()
    }

    async fn leader(&self) -> Option<String> {
        self.leading(&["leader"]).await.map(|s| s.name.clone())
    }

    /// `dump` lists the leader's expiry buckets without a lock (`ExpiryQueue.dump`: the bucket
    /// times first, then each bucket's sessions), and a request touched meanwhile moves its
    /// session to a later bucket, which may be new: the listing misses a live session now and
    /// then (seen: a session missing from one answer in about 200, renewed before and after).
    /// An expired session never comes back (its tracker refuses touches once it is closing),
    /// so two answers in a row without it say it is gone.
    const ABSENCES_TO_CONFIRM: u32 = 2;

    async fn sessions(&self) -> Option<std::collections::BTreeSet<i64>> {
        let lead = self.leading(&["leader", "standalone"]).await?;
        sessions_in_dump(&four_letter(&lead.ip, lead.client_port, b"dump").await?)
    }

    fn crash(&mut self, server: &str) {
        self.procs.kill(server);
    }

    async fn server_metrics(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for server in &self.servers {
            if let Some(text) =
                four_letter_within(&server.ip, server.client_port, b"mntr", Duration::from_secs(1)).await
            {
                found.push((server.name.clone(), text));
            }
        }
        found
    }

    fn restart(&mut self, server: &str) -> Result<(), String> {
        let index = self.servers.iter().position(|s| s.name == server).ok_or_else(|| format!("no server {server}"))?;
        self.launch(index)
    }
}

#[cfg(test)]
mod tests {
    use super::sessions_in_dump;

    /// ZooKeeper 3.8.0's `dump` on a leader (as read here): sessions under expiry buckets, then
    /// the ephemeral nodes per session (which must not count: a session can live without nodes).
    const DUMP: &str = "SessionTracker dump:\nSession Sets (2)/(2):\n0 expire at Tue Dec 01 17:43:57 UTC 2026:\n\
        \t0x1000a2b3c4d0000\n1 expire at Tue Dec 01 17:44:00 UTC 2026:\n\t0x2000a2b3c4d0001\n\
        ephemeral nodes dump:\nSessions with Ephemerals (1):\n0x3000000000000009:\n\t/locks/resource/lock-c1\n";

    #[test]
    fn live_sessions_come_from_the_session_tracker_only() {
        let sessions = sessions_in_dump(DUMP).expect("a dump with a session tracker");
        let expected: Vec<i64> = vec![0x1000a2b3c4d0000, 0x2000a2b3c4d0001];
        assert_eq!(sessions.into_iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn a_follower_dump_without_a_tracker_says_nothing() {
        assert_eq!(sessions_in_dump("ephemeral nodes dump:\nSessions with Ephemerals (0):\n"), None);
    }
}

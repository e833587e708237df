//! Every process a real run starts, by pid, and their end: [`Procs`] kills and reaps them all when
//! it is dropped — at the end of the run, on an error, on Ctrl-C (the run's future is dropped) and
//! on a panic (unwinding drops it). Children also get `PR_SET_PDEATHSIG`, so even a SIGKILLed
//! orchestrator leaves nothing running.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// A started process and what it is, for messages.
struct Started {
    label: String,
    child: Child,
}

#[derive(Default)]
pub struct Procs {
    started: Mutex<Vec<Started>>,
}

impl Procs {
    /// Starts `command` with stdout and stderr appended to `log` (a restarted server keeps its
    /// earlier output); returns its pid.
    pub fn spawn(&self, label: &str, mut command: Command, log: &Path) -> Result<u32, String> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let err = out.try_clone().map_err(|error| format!("{}: {error}", log.display()))?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        // SAFETY: prctl is async-signal-safe; it only marks this child to be killed when its
        // parent dies.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = command.spawn().map_err(|error| format!("cannot start {label}: {error}"))?;
        let pid = child.id();
        self.started.lock().expect("procs lock poisoned").push(Started { label: label.to_string(), child });
        Ok(pid)
    }

    /// Whether the process labelled `label` has exited (and how), reaping it.
    pub fn exited(&self, label: &str) -> Option<String> {
        let mut started = self.started.lock().expect("procs lock poisoned");
        let entry = started.iter_mut().rev().find(|s| s.label == label)?;
        match entry.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// How the newest process labelled `label` ended, if it ended badly (a signal or a non-zero
    /// exit code), reaping it; `None` while it runs or when it exited with 0.
    pub fn failed(&self, label: &str) -> Option<String> {
        let mut started = self.started.lock().expect("procs lock poisoned");
        let entry = started.iter_mut().rev().find(|s| s.label == label)?;
        match entry.child.try_wait() {
            Ok(Some(status)) if !status.success() => Some(status.to_string()),
            _ => None,
        }
    }

    /// Kills (SIGKILL) and reaps the newest process labelled `label`; it leaves the registry.
    pub fn kill(&self, label: &str) {
        let mut started = self.started.lock().expect("procs lock poisoned");
        if let Some(index) = started.iter().rposition(|s| s.label == label) {
            let mut entry = started.remove(index);
            let _ = entry.child.kill();
            let _ = entry.child.wait();
        }
    }

    /// Kills and reaps every process still registered.
    pub fn kill_all(&self) {
        let mut started = self.started.lock().expect("procs lock poisoned");
        for entry in started.iter_mut() {
            // A stopped process dies of SIGKILL too; SIGCONT first lets it go at once.
            signal(entry.child.id(), libc::SIGCONT);
            let _ = entry.child.kill();
        }
        for mut entry in started.drain(..) {
            let _ = entry.child.wait();
        }
    }

    /// The pid of the newest running process labelled `label`.
    pub fn pid(&self, label: &str) -> Option<u32> {
        let started = self.started.lock().expect("procs lock poisoned");
        started.iter().rev().find(|s| s.label == label).map(|s| s.child.id())
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Sends `signal` to `pid`; false if no such process.
pub fn signal(pid: u32, signal: i32) -> bool {
    // SAFETY: kill(2) with a pid we started and a valid signal number.
    unsafe { libc::kill(pid as i32, signal) == 0 }
}

/// How many ports one claim holds.
const PORT_BLOCK: u32 = 64;
/// The first port handed out; blocks run from here to the kernel's ephemeral range.
const FIRST_PORT: u32 = 10_000;

/// The port blocks this process holds, each with its claim and how many of its ports were tried.
static BLOCKS: std::sync::Mutex<Vec<PortBlock>> = std::sync::Mutex::new(Vec::new());

struct PortBlock {
    first: u32,
    tried: u32,
    /// Held for the process's life: no other process takes these ports meanwhile.
    _claim: std::fs::File,
}

/// A free TCP port on 127.0.0.1 for a server of ours, never the same twice in one process and
/// never one another coordsim process on this machine may hand out.
///
/// Ports come from blocks of [`PORT_BLOCK`], each claimed by one process for its life with an
/// exclusive `flock` on `<temp dir>/coordsim-ports/block-B.lock` (the kernel drops the claim
/// however the process ends, a SIGKILL included). Without the claim two runs at once probed the
/// same port, both found it free, and the second server failed to bind it. Taken below the
/// kernel's ephemeral range (`ip_local_port_range`): a port the kernel hands out (`bind` to port
/// 0) may be taken as the source port of some outgoing connection — a cluster member dialling
/// its peers — before our server binds it (seen: an etcd member failing with "address already in
/// use"). Below that range only a listener can take it, and a port some other program listens on
/// is skipped.
pub fn free_port() -> std::io::Result<u16> {
    let mut blocks = BLOCKS.lock().expect("port blocks lock poisoned");
    loop {
        if let Some(block) = blocks.last_mut() {
            while block.tried < PORT_BLOCK {
                let port = (block.first + block.tried) as u16;
                block.tried += 1;
                if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                    return Ok(port);
                }
            }
        }
        let held: Vec<u32> = blocks.iter().map(|b| b.first).collect();
        let block = claim_block(&port_claims(), std::process::id(), &held)?;
        blocks.push(block);
    }
}

fn port_claims() -> std::path::PathBuf {
    std::env::temp_dir().join("coordsim-ports")
}

/// Claims the first free block, trying from one drawn from `pid`, passing over those in `held`.
fn claim_block(dir: &Path, pid: u32, held: &[u32]) -> std::io::Result<PortBlock> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|low| low.parse::<u32>().ok()))
        .unwrap_or(32768)
        .clamp(FIRST_PORT + PORT_BLOCK, 65535);
    let count = (ephemeral_low - FIRST_PORT) / PORT_BLOCK;
    std::fs::create_dir_all(dir)?;
    for step in 0..count {
        let index = (pid.wrapping_mul(211).wrapping_add(step)) % count;
        let first = FIRST_PORT + index * PORT_BLOCK;
        if held.contains(&first) {
            continue;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("block-{index}.lock")))?;
        match file.try_lock() {
            Ok(()) => return Ok(PortBlock { first, tried: 0, _claim: file }),
            Err(std::fs::TryLockError::WouldBlock) => continue,
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("every block of ports below the ephemeral range is claimed ({})", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::Procs;

    fn started(procs: &Procs, label: &str, script: &str) {
        let log = std::env::temp_dir().join(format!("coordsim-procs-{}-{label}.log", std::process::id()));
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(script);
        procs.spawn(label, command, &log).unwrap();
    }

    #[test]
    fn a_process_that_dies_of_a_signal_or_an_error_exit_is_failed_and_a_clean_exit_is_not() {
        let procs = Procs::default();
        started(&procs, "sigpipe", "kill -PIPE $$");
        started(&procs, "error", "exit 3");
        started(&procs, "clean", "exit 0");
        started(&procs, "running", "sleep 30");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let sigpipe = procs.failed("sigpipe").expect("died of a signal");
        assert!(sigpipe.contains("13") || sigpipe.contains("SIGPIPE"), "{sigpipe}");
        assert!(procs.failed("error").expect("exit code 3").contains('3'));
        assert_eq!(procs.failed("clean"), None);
        assert_eq!(procs.failed("running"), None);
    }

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..20).map(|_| super::free_port().expect("a free port")).collect();
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|text| text.split_whitespace().next().and_then(|low| low.parse().ok()))
            .unwrap_or(32768)
            .max(12000);
        assert!(ports.iter().all(|p| *p >= 10000 && *p < low), "{ports:?} (ephemeral ports from {low})");
    }

    #[test]
    fn a_claimed_block_is_not_claimed_again_while_held_and_is_free_once_dropped() {
        let dir = std::env::temp_dir().join(format!("coordsim-ports-test-{}", std::process::id()));
        // Two claims from the same starting point (two runs whose pids draw the same block).
        let first = super::claim_block(&dir, 7, &[]).unwrap();
        let second = super::claim_block(&dir, 7, &[]).unwrap();
        assert_ne!(first.first, second.first, "a held block is passed over");
        let again = first.first;
        drop(first);
        let third = super::claim_block(&dir, 7, &[]).unwrap();
        assert_eq!(third.first, again, "a released block is claimed again");
        drop((second, third));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

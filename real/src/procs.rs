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

/// The next port [`free_port`] tries; 0 before the first call.
static NEXT_PORT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A free TCP port on 127.0.0.1 for a server of ours, never the same twice in one process.
///
/// Taken below the kernel's ephemeral range (`ip_local_port_range`): a port the kernel hands out
/// (`bind` to port 0) may be taken as the source port of some outgoing connection — a cluster
/// member dialling its peers — before our server binds it (seen: an etcd member failing with
/// "address already in use"). Below that range only a listener can take it. Runs start at an
/// offset drawn from the pid, so two runs on one machine rarely probe the same ports.
pub fn free_port() -> std::io::Result<u16> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|low| low.parse::<u32>().ok()))
        .unwrap_or(32768)
        .clamp(12000, 65535);
    let (first, span) = (10000u32, ephemeral_low - 10000);
    let start = first + (std::process::id() * 211) % span;
    let _ =
        NEXT_PORT.compare_exchange(0, start, std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..span {
        let candidate = NEXT_PORT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let port = first + (candidate - first) % span;
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return Ok(port as u16);
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "no free port below the ephemeral range"))
}

#[cfg(test)]
mod tests {
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
}

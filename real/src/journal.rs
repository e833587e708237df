//! A process's part of the history: entries appended to a JSON-lines file as they happen.
//!
//! Every process of a real run (the orchestrator with the nemesis and the resource, each client)
//! writes its own journal; [`crate::merge`] joins them into one [`History`] after the run. Times
//! come from `CLOCK_MONOTONIC`, which all processes of the machine share, as nanoseconds since the
//! run's epoch (the orchestrator's reading when the run started): true time, never a client's
//! possibly faked wall clock. Each line is written with one `write` call and no buffering, so a
//! client killed or paused mid-run loses nothing it recorded.
//!
//! [`History`]: coordsim_checker::history::History

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use coordsim_checker::history::{Call, Entry, Event, OpId, Return};

/// Nanoseconds of `CLOCK_MONOTONIC`, shared by every process of the machine: true time. Read
/// with the raw system call, not libc's wrapper: a client whose clock a scenario skews runs under
/// libfaketime, which intercepts the wrapper (and so every timer of the client) but not this.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the clock_gettime system call writes into the timespec we own; CLOCK_MONOTONIC
    // always exists on Linux.
    let rc = unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut now as *mut libc::timespec) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC is readable");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// One process's journal.
pub struct Journal {
    file: Mutex<File>,
    /// `CLOCK_MONOTONIC` at the run's start.
    epoch_ns: u64,
    /// Operation ids of this process: `op_base`, `op_base + 1`, ... (bases are spaced so that
    /// the processes of one run never collide).
    next_op: AtomicU64,
}

impl Journal {
    /// Creates (truncates) the journal at `path`.
    pub fn create(path: &Path, epoch_ns: u64, op_base: OpId) -> std::io::Result<Journal> {
        let file = File::create(path)?;
        Ok(Journal { file: Mutex::new(file), epoch_ns, next_op: AtomicU64::new(op_base) })
    }

    /// True time since the run's start, in ns.
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns)
    }

    pub fn record(&self, node: &str, event: Event) {
        self.record_at(self.now_ns(), node, event);
    }

    /// Records an entry at an earlier true time (an observer that learns of an event late, but
    /// knows when it happened at the latest); the merge sorts entries by time.
    pub fn record_at(&self, time_ns: u64, node: &str, event: Event) {
        let entry = Entry { time_ns, node: node.to_string(), event };
        let mut line = serde_json::to_string(&entry).expect("history entries serialize");
        line.push('\n');
        let mut file = self.file.lock().expect("journal lock poisoned");
        // A journal that cannot be written makes the run's verdicts meaningless: stop loudly.
        file.write_all(line.as_bytes()).expect("the journal is writable");
    }

    pub fn invoke(&self, node: &str, call: Call) -> OpId {
        let op = self.next_op.fetch_add(1, Ordering::SeqCst);
        self.record(node, Event::Invoke { op, call });
        op
    }

    /// A watch stream's id: drawn from the operation ids, so ids stay unique across the run's
    /// processes.
    pub fn next_watch_id(&self) -> u64 {
        self.next_op.fetch_add(1, Ordering::SeqCst)
    }

    pub fn ok(&self, node: &str, op: OpId, ret: Return) {
        self.record(node, Event::Ok { op, ret });
    }

    pub fn fail(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(node, Event::Fail { op, error: error.into() });
    }

    pub fn info(&self, node: &str, op: OpId, error: impl Into<String>) {
        self.record(node, Event::Info { op, error: error.into() });
    }
}

/// Reads a journal back. A last line cut short (its process was killed mid-write) is dropped;
/// any other bad line is an error naming the file and line.
pub fn read(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut entries = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Entry>(line) {
            Ok(entry) => entries.push(entry),
            Err(_) if index + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(error) => return Err(format!("{}:{}: {error}", path.display(), index + 1)),
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordsim_checker::history::Phase;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("coordsim-journal-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("c1.jsonl")
    }

    #[test]
    fn a_journal_reads_back_in_order_with_op_ids_from_its_base() {
        let path = temp("order");
        let journal = Journal::create(&path, monotonic_ns(), 5_000_000).unwrap();
        let op = journal.invoke("c1", Call::LeaseGrant { ttl_ms: 5000 });
        journal.ok("c1", op, Return::LeaseGranted { lease: 7, ttl_ms: 5000 });
        journal.record("c1", Event::Belief { lock: "/l".into(), token: 3, phase: Phase::Start, reason: None });
        let entries = read(&path).unwrap();
        assert_eq!(op, 5_000_000);
        assert_eq!(entries.len(), 3);
        assert!(entries.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        assert!(matches!(entries[1].event, Event::Ok { op: 5_000_000, .. }));
    }

    #[test]
    fn a_line_cut_short_by_a_kill_is_dropped_but_a_bad_line_inside_is_an_error() {
        let path = temp("cut");
        let journal = Journal::create(&path, monotonic_ns(), 0).unwrap();
        journal.record("c1", Event::LeaseExpiry { lease: 1, latest_ns: None });
        drop(journal);
        let whole = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{whole}{{\"time_ns\":12,\"no")).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
        std::fs::write(&path, format!("{{\"time_ns\":12,\"no\n{whole}")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("c1.jsonl:1:"), "{error}");
    }
}

//! `coordsim bench check`: the linearizability checker's speed and memory, file by file: history
//! files or folders (by default the corpora shipped in `checker/tests/data`: Porcupine's Jepsen
//! etcd logs and kv files, Knossos's data) and the generated register histories of issue 19's
//! scaling grid (up to 1,000,000 operations at 5 clients, 3,000 at 50). Each item is read, parsed
//! and checked as `coordsim check` does; its time covers parse and check, its memory is the
//! process's peak resident set during the item (Linux: `VmHWM` after a reset through
//! `/proc/self/clear_refs`). `--write-grid DIR` writes the generated histories for other tools
//! (scripts/porcupine-side-by-side.sh) instead.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use coordsim_checker::generate::{RegisterSpec, register_log};

use crate::check::{self, Request};
use crate::load::InputError;

/// (operations, clients, about one in N ends `:info`, 0 for none). The `:info` rows are
/// operations that crashed (timed out), spread through the history and open to its end, at
/// Jepsen's concurrency (issue 39): 1 % and 10 % at 5, 20 and 50 clients.
pub const GRID: [(usize, usize, u64); 14] = [
    (1_000_000, 5, 0),
    (100_000, 5, 0),
    (100_000, 10, 0),
    (30_000, 10, 0),
    (20_000, 10, 100),
    (10_000, 20, 0),
    (3_000, 50, 0),
    (100_000, 5, 100),
    (100_000, 5, 10),
    (100_000, 20, 100),
    (100_000, 20, 10),
    (1_000_000, 20, 100),
    (3_000, 50, 100),
    (3_000, 50, 10),
];

const DEFAULT_CORPUS: &str = "checker/tests/data";

fn spec_of((operations, clients, info_one_in): (usize, usize, u64)) -> RegisterSpec {
    RegisterSpec { operations, clients, info_one_in, seed: 1 }
}

fn name_of((operations, clients, info_one_in): (usize, usize, u64)) -> String {
    match info_one_in {
        0 => format!("register-{operations}-c{clients}.log"),
        n => format!("register-{operations}-c{clients}-info{n}.log"),
    }
}

pub fn run(histories: &[PathBuf], write_grid: Option<&Path>, request: &Request) -> Result<ExitCode, InputError> {
    if let Some(folder) = write_grid {
        return write(folder);
    }
    let paths = if histories.is_empty() && Path::new(DEFAULT_CORPUS).is_dir() {
        vec![PathBuf::from(DEFAULT_CORPUS)]
    } else {
        histories.to_vec()
    };
    let files = if paths.is_empty() { Vec::new() } else { check::files_of(&paths)? };
    let options = check::options_of(request);
    crate::outln!("{:<48} {:>9} {:>7} {:>8}  verdict", "history", "bytes", "ms", "peak MB");
    let mut total_ms = 0.0;
    let mut measure = |name: &str, text: &str| {
        reset_peak_rss();
        let started = Instant::now();
        let outcome = check::check_text(Path::new(name), text, request, &options);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        total_ms += ms;
        let verdict = outcome.line.split_once(": ").map_or(outcome.line.as_str(), |(_, rest)| rest).to_string();
        let peak = crate::cli::peak_rss_mb().map_or_else(|| "?".to_string(), |mb| format!("{mb:.0}"));
        crate::outln!("{:<48} {:>9} {ms:>7.1} {peak:>8}  {}", shorten(name), text.len(), verdict);
    };
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|error| InputError::Io { path: file.display().to_string(), error })?;
        measure(&file.display().to_string(), &text);
    }
    if histories.is_empty() {
        for row in GRID {
            let text = register_log(&spec_of(row));
            measure(&format!("generated/{}", name_of(row)), &text);
        }
    }
    crate::outln!("total {total_ms:.0} ms");
    Ok(ExitCode::SUCCESS)
}

/// The grid's histories as files; a file already there is left alone if it holds the same bytes
/// (the generator is deterministic) and refused otherwise, so nothing of the user's is lost.
/// Every file already there is compared before the first is written: a refusal writes nothing.
fn write(folder: &Path) -> Result<ExitCode, InputError> {
    let io = |path: &Path, error| InputError::Io { path: path.display().to_string(), error };
    for row in GRID {
        let path = folder.join(name_of(row));
        if let Ok(existing) = std::fs::read(&path)
            && existing != register_log(&spec_of(row)).as_bytes()
        {
            return Err(InputError::Usage(format!(
                "{}: exists and is not the generated history; move it or choose another folder",
                path.display()
            )));
        }
    }
    std::fs::create_dir_all(folder).map_err(|error| io(folder, error))?;
    for row in GRID {
        let path = folder.join(name_of(row));
        if !path.exists() {
            std::fs::write(&path, register_log(&spec_of(row))).map_err(|error| io(&path, error))?;
        }
        crate::outln!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn shorten(name: &str) -> String {
    let chars = name.chars().count();
    if chars <= 48 { name.to_string() } else { format!("…{}", name.chars().skip(chars - 47).collect::<String>()) }
}

fn reset_peak_rss() {
    // "5" resets the peak resident set (proc(5), /proc/pid/clear_refs); not possible everywhere.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

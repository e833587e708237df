//! Output folders keep the user's work (issue 21): coordsim lists the files it writes in each
//! output folder's manifest, [`MANIFEST`] (a name and a hash of the bytes written, per line),
//! overwrites only those still holding what it wrote, removes its own stale ones, and refuses
//! (exit 2, naming the path) to overwrite a file it did not write or that was edited since.
//!
//! A folder written before manifests existed has none: there a file counts as coordsim's when its
//! first 4 KiB name coordsim (every history, summary, sweep, report and minimal scenario does),
//! and the manifest starts with the next write.
//!
//! One writer per folder at a time: a run's seeds each have their own folder, and the files of a
//! run's top folder are written by its main thread.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use crate::load::InputError;

/// The manifest's file name, in each folder coordsim writes to.
pub const MANIFEST: &str = ".coordsim-files";

fn io(error: std::io::Error, path: &Path) -> InputError {
    InputError::Io { path: path.display().to_string(), error }
}

/// The files the manifest of `dir` lists, with the hash of what was written (none if it has no
/// manifest).
fn manifest(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(dir.join(MANIFEST))
        .map(|text| {
            text.lines()
                .filter_map(|line| line.split_once('\t'))
                .map(|(name, hash)| (name.to_string(), hash.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The hash recorded for an entry whose bytes coordsim does not track: a folder, or a file other
/// processes of a run write (a real run's cluster data and logs).
const UNTRACKED: &str = "-";

/// The names the manifest of `dir` lists.
pub fn listed(dir: &Path) -> BTreeSet<String> {
    manifest(dir).into_keys().collect()
}

/// FNV-1a, 64 bits: enough to tell whether a file still holds what coordsim wrote.
fn hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Whether coordsim wrote `path` (see the module documentation).
pub fn is_ours(path: &Path) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return false;
    };
    if dir.join(MANIFEST).exists() {
        return manifest(dir).get(name).is_some_and(|written| {
            written == UNTRACKED || std::fs::read(path).is_ok_and(|bytes| hash(&bytes) == *written)
        });
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path).and_then(|file| file.take(4096).read_to_end(&mut head)).is_ok()
        && String::from_utf8_lossy(&head).contains("coordsim")
}

/// Refuses a `path` that holds a file coordsim did not write: for commands to ask before their
/// work, not after it.
pub fn check_writable(path: &Path) -> Result<(), InputError> {
    if path.exists() && !is_ours(path) {
        return Err(InputError::Usage(format!(
            "{}: exists and was not written by coordsim; move it or choose another --out",
            path.display()
        )));
    }
    Ok(())
}

/// Writes `path`, creating its folder, unless a file there is not coordsim's; lists it in the
/// folder's manifest.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), InputError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io(e, dir))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| InputError::Usage(format!("{}: not a file name coordsim can write", path.display())))?;
    check_writable(path)?;
    let bytes = bytes.as_ref();
    let mut files = manifest(dir);
    files.insert(name.to_string(), hash(bytes));
    write_manifest(dir, &files)?;
    std::fs::write(path, bytes).map_err(|e| io(e, path))
}

fn write_manifest(dir: &Path, files: &BTreeMap<String, String>) -> Result<(), InputError> {
    let path = dir.join(MANIFEST);
    let text: String = files.iter().map(|(name, hash)| format!("{name}\t{hash}\n")).collect();
    std::fs::write(&path, text).map_err(|e| io(e, &path))
}

/// Lists `names` in the manifest of `dir` as coordsim's without tracking their bytes: what a
/// run is about to create there through other processes (a real run's `cluster/`, its logs).
pub fn claim(dir: &Path, names: &[&str]) -> Result<(), InputError> {
    std::fs::create_dir_all(dir).map_err(|e| io(e, dir))?;
    let mut files = manifest(dir);
    for name in names {
        files.entry(name.to_string()).or_insert_with(|| UNTRACKED.to_string());
    }
    write_manifest(dir, &files)
}

/// Empties a folder coordsim wrote before, for a fresh run: removes what its manifest lists and
/// refuses (naming it) if anything else is there. A folder without a manifest is left alone
/// (`Ok(false)`: the caller decides); `Ok(true)` once cleared.
pub fn clear(dir: &Path) -> Result<bool, InputError> {
    if !dir.join(MANIFEST).exists() {
        return Ok(false);
    }
    let files = manifest(dir);
    let entries = std::fs::read_dir(dir).map_err(|e| io(e, dir))?;
    let mut ours = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| io(e, dir))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name == MANIFEST {
            continue;
        }
        if !files.contains_key(&name) || (path.is_file() && !is_ours(&path)) {
            return Err(InputError::Usage(format!(
                "{}: was not written by coordsim (or was edited since); move it or choose another --out",
                path.display()
            )));
        }
        ours.push(path);
    }
    for path in ours {
        let removed = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        removed.map_err(|e| io(e, &path))?;
    }
    std::fs::remove_file(dir.join(MANIFEST)).map_err(|e| io(e, dir))?;
    Ok(true)
}

/// Removes `path` if coordsim wrote it (a report a re-run no longer needs); leaves anything else.
pub fn remove_stale(path: &Path) -> Result<(), InputError> {
    if path.exists() && is_ours(path) {
        std::fs::remove_file(path).map_err(|e| io(e, path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_the_users_is_never_overwritten_and_ours_are() {
        let dir = std::env::temp_dir().join(format!("coordsim-owned-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mine = dir.join("report.html");
        std::fs::write(&mine, "my notes").unwrap();
        let error = write(&mine, "coordsim report").unwrap_err().to_string();
        assert!(error.contains("report.html: exists and was not written by coordsim"), "{error}");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes");
        remove_stale(&mine).unwrap();
        assert!(mine.exists(), "a user's file is not removed as stale");

        let ours = dir.join("history.json");
        write(&ours, "{\"schema\":\"coordsim-history/1\"}").unwrap();
        write(&ours, "{\"schema\":\"coordsim-history/1\", \"seed\": 2}").unwrap();
        assert_eq!(listed(&dir), BTreeSet::from(["history.json".to_string()]));
        // With a manifest, only what it lists is ours, whatever the text says, and only while it
        // holds what coordsim wrote.
        std::fs::write(dir.join("summary.json"), "coordsim, but written by the user").unwrap();
        assert!(write(&dir.join("summary.json"), "x").is_err());
        std::fs::write(&ours, "edited by the user").unwrap();
        assert!(write(&ours, "{}").is_err());
        remove_stale(&ours).unwrap();
        assert!(ours.exists(), "an edited file is the user's now");
        write(&dir.join("report.html"), "x").unwrap_err();
        std::fs::write(&ours, "{\"schema\":\"coordsim-history/1\", \"seed\": 2}").unwrap();
        remove_stale(&ours).unwrap();
        assert!(!ours.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_folder_is_cleared_of_what_it_lists_and_only_that() {
        let dir = std::env::temp_dir().join(format!("coordsim-owned-clear-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!clear(&dir.join("absent")).unwrap_or(true), "no manifest, nothing done");
        claim(&dir, &["cluster", "nemesis.jsonl"]).unwrap();
        std::fs::create_dir_all(dir.join("cluster/s1")).unwrap();
        std::fs::write(dir.join("cluster/s1/wal"), "x").unwrap();
        std::fs::write(dir.join("nemesis.jsonl"), "{}").unwrap();
        write(&dir.join("history.json"), "{}").unwrap();
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        let error = clear(&dir).unwrap_err().to_string();
        assert!(error.contains("notes.txt: was not written by coordsim"), "{error}");
        assert!(dir.join("cluster/s1/wal").exists(), "nothing removed when refusing");
        std::fs::remove_file(dir.join("notes.txt")).unwrap();
        assert!(clear(&dir).unwrap());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_from_before_manifests_keeps_working() {
        let dir = std::env::temp_dir().join(format!("coordsim-owned-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("history.json"), "{\"schema\":\"coordsim-history/1\"}").unwrap();
        write(&dir.join("history.json"), "{\"schema\":\"coordsim-history/1\"}").unwrap();
        assert!(dir.join(MANIFEST).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

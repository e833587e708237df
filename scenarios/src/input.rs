//! Reading a user's input file with bounds: only a regular file is read (a FIFO would block on
//! open until a writer came, a device such as /dev/zero never ends), and never more than a
//! stated size, checked before the first byte is read and again while reading (a file that grows
//! meanwhile). So memory follows the limit, not whatever the path names, and a bad path is
//! refused at once.

use std::io::Read;
use std::path::Path;

/// The most bytes an input file may hold by default: 1 GiB. A valid history peaks at about 5x
/// its JSON size while it is checked (its text, its parsed entries and the checkers' tables:
/// 25 MB for a 4.3 MB history of 39,499 entries, docs/hostile-input.md); one with an error
/// stops at it, holding little more than the text.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    #[error("not a regular file ({kind}): coordsim reads histories, logs and scenarios from files")]
    NotAFile { kind: &'static str },
    #[error("{size} bytes, over the limit of {limit} bytes for one input file")]
    TooLarge { size: u64, limit: u64 },
    #[error("line {line}: not UTF-8 text (byte {at})")]
    NotUtf8 { line: usize, at: usize },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The file at `path` as text, if it is a regular file of at most `limit` bytes of UTF-8.
pub fn read_text(path: &Path, limit: u64) -> Result<String, InputFileError> {
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(InputFileError::NotAFile { kind: kind_of(&metadata) });
    }
    if metadata.len() > limit {
        return Err(InputFileError::TooLarge { size: metadata.len(), limit });
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(InputFileError::TooLarge { size: bytes.len() as u64, limit });
    }
    String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let line = error.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        InputFileError::NotUtf8 { line, at }
    })
}

fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("coordsim-input-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_device_and_a_fifo_are_refused_without_reading_or_blocking() {
        let error = read_text(Path::new("/dev/zero"), DEFAULT_LIMIT).unwrap_err();
        assert!(matches!(error, InputFileError::NotAFile { kind: "a device" }), "{error}");
        let dir = scratch("fifo");
        let fifo = dir.join("history.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // Opening it would block until a writer came: it is refused from its metadata.
        let error = read_text(&fifo, DEFAULT_LIMIT).unwrap_err();
        assert!(matches!(error, InputFileError::NotAFile { kind: "a FIFO" }), "{error}");
        let error = read_text(&dir, DEFAULT_LIMIT).unwrap_err();
        assert!(matches!(error, InputFileError::NotAFile { kind: "a folder" }), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let dir = scratch("limit");
        let file = dir.join("history.json");
        std::fs::write(&file, "x".repeat(100)).unwrap();
        let error = read_text(&file, 99).unwrap_err();
        assert_eq!(error.to_string(), "100 bytes, over the limit of 99 bytes for one input file");
        assert_eq!(read_text(&file, 100).unwrap().len(), 100);
        std::fs::write(&file, b"ok\n\xff").unwrap();
        assert_eq!(read_text(&file, 100).unwrap_err().to_string(), "line 2: not UTF-8 text (byte 3)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

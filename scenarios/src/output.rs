//! Writing to stdout without panicking: `println!` panics when stdout is closed or full, which
//! would turn `coordsim run ... | head` into a crash. [`outln!`](crate::outln) reports the error
//! and exits with 2 instead; a closed pipe ends the process as SIGPIPE ends `cat` (see [`line`]).

use std::fmt;
use std::io::{ErrorKind, Write};

/// Keeps SIGPIPE ignored for the whole process, as Rust sets it up. A process-wide default
/// disposition (which this function set until 2026-12) kills any process of ours that writes to a
/// socket its peer has reset: hyper and h2 write with `writev`, which has no `MSG_NOSIGNAL`, so a
/// real-run client whose etcd member had just been crashed died of SIGPIPE mid-run, silently
/// (seen in CI: ttl-reset-on-leader-change on real etcd, c2 gone 7.5 s into the run; traced with
/// `perf record -e signal:signal_generate`). Only a write to stdout that finds the pipe closed
/// ends the process by SIGPIPE now ([`line`]).
pub fn init() {
    // SAFETY: setting a signal's disposition to ignore, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Ends the process as a closed pipe ends `cat`: by SIGPIPE (a shell sees 141), quietly.
fn die_of_sigpipe() -> ! {
    // SAFETY: restoring SIGPIPE's default disposition and raising it in this thread; nothing
    // runs after it but the exit below, should the signal somehow not end the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// Writes one line to stdout. A closed pipe (the reader is gone: `| head`) ends the process by
/// SIGPIPE; any other failure (a full disk) is said on stderr, exit code 2.
pub fn line(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{args}").and_then(|()| stdout.flush()) {
        if error.kind() == ErrorKind::BrokenPipe {
            die_of_sigpipe();
        }
        eprintln!("error: cannot write to stdout: {error}");
        std::process::exit(2);
    }
}

/// `println!` that never panics: see the module docs.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// The longest word (a run of non-blank characters) an error message shows whole: a path is
/// one word, and must stay whole; a value of the user's quoted back may be any size.
const LONGEST_WORD: usize = 256;

/// An error message as one readable line: control characters escaped (`\n`, `\r`, `\t`,
/// `\u{1b}`), so a value holding a newline cannot break the line, and every word longer than
/// [`LONGEST_WORD`] bytes (a user's value quoted back) cut to its start and its size, so a
/// message about a 1 MB string stays a few hundred bytes.
pub fn one_line(message: &str) -> String {
    let mut escaped = String::with_capacity(message.len().min(4096));
    for c in message.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if c.is_control() => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => escaped.push(c),
        }
    }
    let mut out = String::with_capacity(escaped.len().min(4096));
    for (i, word) in escaped.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if word.len() <= LONGEST_WORD {
            out.push_str(word);
        } else {
            let cut = (0..=120).rev().find(|&i| word.is_char_boundary(i)).unwrap_or(0);
            out.push_str(&format!("{}… ({} bytes in all)", &word[..cut], word.len()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// What killed a real run's client: writing with `writev` (as hyper and h2 do) to a socket
    /// whose peer reset it. After `init` that is an error to handle, never a signal; with SIGPIPE
    /// at its default disposition this test process dies.
    #[test]
    fn after_init_a_write_to_a_reset_socket_is_an_error_not_a_death() {
        use std::io::{IoSlice, Write};
        use std::net::{TcpListener, TcpStream};
        super::init();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        // SO_LINGER 0: the close sends a reset.
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&accepted);
        // SAFETY: setsockopt on a socket we own, with a linger value of the right size.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
        drop(accepted);
        let data = [0u8; 1024];
        // The first write after the reset fails with ECONNRESET; the next ones find the socket
        // closed (EPIPE), which is where the kernel raises SIGPIPE.
        let mut errors = Vec::new();
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            if let Err(error) = client.write_vectored(&[IoSlice::new(&data)]) {
                errors.push(error.kind());
            }
            if errors.len() >= 3 {
                break;
            }
        }
        assert!(errors.contains(&std::io::ErrorKind::BrokenPipe), "{errors:?}");
    }

    #[test]
    fn a_long_value_with_a_newline_becomes_one_short_line() {
        let value = format!("{}\nx", "p".repeat(1_000_000));
        let line = one_line(&format!("big.toml:42: field `kind`: unknown variant `{value}`, expected one of `pause`"));
        assert!(!line.contains('\n') && line.len() < 400, "{line}");
        assert!(line.contains("(1000006 bytes in all)") && line.ends_with("expected one of `pause`"), "{line}");
        assert_eq!(one_line("a\r\tb\u{1b}c"), "a\\r\\tb\\u{1b}c");
        assert_eq!(one_line("short words stay"), "short words stay");
    }
}

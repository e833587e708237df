//! Writing to stdout without panicking: `println!` panics when stdout is closed or full, which
//! would turn `coordsim run ... | head` into a crash. [`outln!`](crate::outln) reports the error
//! and exits with 2 instead; a closed pipe ends the process quietly (SIGPIPE, see [`init`]), as
//! it does for other command-line tools.

use std::fmt;
use std::io::Write;

/// Lets a closed stdout pipe end the process by SIGPIPE, as for `cat` (Rust ignores SIGPIPE by
/// default, which makes every later write fail instead).
pub fn init() {
    // SAFETY: resetting a signal disposition to its default, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Writes one line to stdout; on failure, says so on stderr and exits with 2.
pub fn line(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{args}").and_then(|()| stdout.flush()) {
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

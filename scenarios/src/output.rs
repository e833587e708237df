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

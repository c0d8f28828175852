//! Writing to stdout and stderr the way command-line tools do. `println!` and friends panic
//! when the write fails, and the Rust runtime ignores `SIGPIPE`, so `fedsched completion bash |
//! head -1` ended in a panic (exit 101) whenever `head` closed the pipe first. Here:
//!
//! - stdout closed by its reader (`EPIPE`): the process ends at once with 141, the status a
//!   shell reports for a coreutils program killed by `SIGPIPE`, and says nothing (the reader
//!   asked for no more);
//! - any other stdout failure (a full disk behind `>`): one line on stderr, exit 2 (an
//!   operational failure, as every command reports one);
//! - stderr failures are ignored: diagnostics that cannot be shown must not stop the work.
//!
//! Every print of the crate goes through [`out`] and [`err`] (the [`crate::outln`],
//! [`crate::out`], [`crate::errln`] macros); `src/lib.rs` denies `print!`/`println!`/
//! `eprint!`/`eprintln!` outside tests, so a new print path cannot bypass them.

use std::io::Write;

/// The exit status after stdout's reader went away (128 + `SIGPIPE`).
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// Writes `text` to stdout (flushed), or ends the process as the module says.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        drop(stdout);
        stdout_failed(&e);
    }
}

/// Writes `bytes` to stdout as [`out`] does (a completion script, already encoded).
pub fn out_bytes(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        drop(stdout);
        stdout_failed(&e);
    }
}

/// Writes `text` to stderr; a failure is ignored.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_EXIT);
    }
    err(&format!("fedsched: cannot write to stdout: {e}\n"));
    std::process::exit(2);
}

/// `println!` on [`out`].
#[macro_export]
macro_rules! outln {
    () => { $crate::util::stdio::out("\n") };
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        line.push('\n');
        $crate::util::stdio::out(&line);
    }};
}

/// `print!` on [`out`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::util::stdio::out(&format!($($arg)*)) };
}

/// `eprintln!` on [`err`].
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        line.push('\n');
        $crate::util::stdio::err(&line);
    }};
}

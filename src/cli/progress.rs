//! Progress of long work on a terminal (`simulate --generate`, `render`, `bench`): one line on
//! stderr, redrawn in place a few times a second by a small thread, with what is being done,
//! `done/total` when it is known and the time elapsed. Nothing at all when stdout or stderr is
//! not a terminal or under systemd (`JOURNAL_STREAM` or `INVOCATION_ID` set), so pipes, logs and
//! the tests' captured output stay exactly as they are. Work shorter than [`DELAY`] shows
//! nothing either.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Nothing is drawn before the work has run this long.
const DELAY: Duration = Duration::from_millis(400);
/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(200);

/// Whether progress is shown: both outputs are terminals and this is not a systemd service.
pub fn enabled() -> bool {
    let systemd = std::env::var_os("JOURNAL_STREAM").is_some() || std::env::var_os("INVOCATION_ID").is_some();
    decide(std::io::stdout().is_terminal(), std::io::stderr().is_terminal(), systemd)
}

fn decide(stdout_terminal: bool, stderr_terminal: bool, under_systemd: bool) -> bool {
    stdout_terminal && stderr_terminal && !under_systemd
}

#[derive(Debug)]
struct State {
    label: String,
    done: u64,
    total: Option<u64>,
    started: Instant,
    /// Whether a line is on the screen (to clear before anything else is printed).
    drawn: bool,
}

impl State {
    fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        match self.total {
            Some(total) if total > 0 => {
                let pct = self.done.saturating_mul(100) / total;
                format!("{}: {}/{} ({pct}%), {secs:.0} s", self.label, self.done, total)
            }
            _ => format!("{}, {secs:.0} s", self.label),
        }
    }
}

/// A progress line; a no-op when [`enabled`] is false. Cleared when dropped.
#[derive(Debug)]
pub struct Progress {
    shown: Option<Shown>,
}

#[derive(Debug)]
struct Shown {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn clear(state: &mut State) {
    if state.drawn {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        state.drawn = false;
    }
}

impl Progress {
    /// Starts showing `label` (when [`enabled`]).
    pub fn start(label: impl Into<String>) -> Progress {
        if !enabled() {
            return Progress { shown: None };
        }
        let state = Arc::new(Mutex::new(State {
            label: label.into(),
            done: 0,
            total: None,
            started: Instant::now(),
            drawn: false,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (Arc::clone(&state), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    let mut waited = Duration::ZERO;
                    let mut last = String::new();
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EVERY.min(DELAY));
                        waited += EVERY.min(DELAY);
                        if waited < DELAY || stop.load(Ordering::Relaxed) {
                            continue;
                        }
                        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                        let line = s.line();
                        if s.drawn && line == last {
                            continue; // nothing new to say
                        }
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r\x1b[2K{line}");
                        let _ = err.flush();
                        s.drawn = true;
                        last = line;
                    }
                })
                .ok()
        };
        Progress { shown: Some(Shown { state, stop, thread }) }
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        if let Some(shown) = &self.shown {
            f(&mut shown.state.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// What is being done now (the count starts again).
    pub fn phase(&self, label: impl Into<String>) {
        self.with(|s| {
            s.label = label.into();
            s.done = 0;
            s.total = None;
        });
    }

    /// `done` of `total` (when known).
    pub fn set(&self, done: u64, total: Option<u64>) {
        self.with(|s| {
            s.done = done;
            s.total = total;
        });
    }

    /// Prints `line` on stdout without mixing it with the progress line.
    pub fn println(&self, line: &str) {
        match &self.shown {
            Some(shown) => {
                let mut s = shown.state.lock().unwrap_or_else(|p| p.into_inner());
                clear(&mut s);
                crate::outln!("{line}");
            }
            None => crate::outln!("{line}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(mut shown) = self.shown.take() {
            shown.stop.store(true, Ordering::Relaxed);
            if let Some(t) = shown.thread.take() {
                let _ = t.join();
            }
            clear(&mut shown.state.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_only_on_two_terminals_outside_systemd() {
        assert!(decide(true, true, false));
        assert!(!decide(false, true, false), "stdout piped");
        assert!(!decide(true, false, false), "stderr piped");
        assert!(!decide(true, true, true), "under systemd");
    }

    #[test]
    fn the_line_says_what_how_far_and_how_long() {
        let s = State {
            label: "generating clusters".into(),
            done: 5,
            total: Some(20),
            started: Instant::now(),
            drawn: false,
        };
        assert_eq!(s.line(), "generating clusters: 5/20 (25%), 0 s");
        let s = State { total: None, ..s };
        assert_eq!(s.line(), "generating clusters, 0 s");
    }
}

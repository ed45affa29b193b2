//! `--ui dashboard`: a full-screen live view of the sweep on the terminal (stderr), on its own thread.
//!
//! It reads the live [`Board`] the aggregator publishes ([`crate::live`]) at a bounded refresh
//! ([`REFRESH`]); it never touches the aggregator or the request path. While it is up, log lines go to
//! the log file and to its footer instead of the terminal ([`crate::logging::divert_stderr`]); when it
//! closes, the warnings and errors among them are printed. The terminal is in raw mode, so Ctrl-C
//! arrives as a key: the dashboard turns it into a real SIGINT ([`crate::sys`]), and the signal handlers
//! do what they always do (stop sending, keep the rows, write the summary, exit 130; a second one exits
//! at once). The terminal is restored on every way out ([`terminal`]).

mod error;
mod model;
mod terminal;
mod view;

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

pub use error::DashboardError;

use crate::live::Board;
use crate::shutdown::Shutdown;

/// Time between two frames.
pub const REFRESH: Duration = Duration::from_millis(250);

/// Log lines kept for the footer.
const LOG_TAIL: usize = 50;

/// Warnings and errors kept to print when the dashboard closes.
const MAX_WARNINGS: usize = 40;

/// The log lines that arrived while the dashboard was up.
#[derive(Default)]
struct Captured {
    tail: VecDeque<String>,
    warnings: Vec<String>,
    more_warnings: usize,
}

impl Captured {
    fn push(&mut self, bytes: &[u8]) {
        for line in String::from_utf8_lossy(bytes).lines() {
            if line.contains(" - llmperf - WARN") || line.contains(" - llmperf - ERROR") {
                if self.warnings.len() < MAX_WARNINGS {
                    self.warnings.push(line.to_string());
                } else {
                    self.more_warnings += 1;
                }
            }
            if self.tail.len() == LOG_TAIL {
                self.tail.pop_front();
            }
            self.tail.push_back(line.to_string());
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running dashboard; closing (or dropping) it gives the terminal back.
pub struct Dashboard {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    captured: Arc<Mutex<Captured>>,
    shutdown: Shutdown,
    exit_hook: u64,
}

impl Dashboard {
    /// Takes over the terminal and starts drawing `board`. An error (stderr is not a terminal, or it
    /// cannot be set up) names `--ui dashboard`.
    pub fn start(board: Arc<Board>, shutdown: &Shutdown) -> Result<Dashboard, DashboardError> {
        if !std::io::stderr().is_terminal() {
            return Err(DashboardError::NotATerminal);
        }
        let term = terminal::enter().map_err(|e| DashboardError::Terminal(e.to_string()))?;
        let captured = Arc::new(Mutex::new(Captured::default()));
        let sink = captured.clone();
        crate::logging::divert_stderr(Some(Box::new(move |bytes| lock(&sink).push(bytes))));
        // A second Ctrl-C exits at once: give the terminal back first.
        let exit_hook = shutdown.on_exit(Box::new(terminal::restore));
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, tail) = (stop.clone(), captured.clone());
        let thread = std::thread::Builder::new()
            .name("llmperf-dashboard".into())
            .spawn(move || run(term, &board, &tail, &flag));
        let mut dashboard = Dashboard {
            stop,
            thread: None,
            captured,
            shutdown: shutdown.clone(),
            exit_hook,
        };
        match thread {
            Ok(t) => dashboard.thread = Some(t),
            Err(e) => {
                drop(dashboard);
                return Err(DashboardError::Thread(e.to_string()));
            }
        }
        Ok(dashboard)
    }
}

/// Closing (dropping) the dashboard restores the terminal, then prints the warnings logged meanwhile.
impl Drop for Dashboard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        terminal::restore();
        crate::logging::divert_stderr(None);
        self.shutdown.remove_exit_hook(self.exit_hook);
        let captured = std::mem::take(&mut *lock(&self.captured));
        if !captured.warnings.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "Warnings and errors while the dashboard was up (every log line is in the run's benchmark.log):");
            for line in &captured.warnings {
                let _ = writeln!(err, "{line}");
            }
            if captured.more_warnings > 0 {
                let _ = writeln!(err, "… and {} more", captured.more_warnings);
            }
        }
    }
}

/// The dashboard thread: a frame every [`REFRESH`] (at once after a resize), keys in between.
fn run(mut term: terminal::Term, board: &Board, captured: &Mutex<Captured>, stop: &AtomicBool) {
    let mut history = model::History::new();
    while !stop.load(Ordering::Acquire) {
        let log = lock(captured)
            .tail
            .iter()
            .rev()
            .take(3)
            .rev()
            .cloned()
            .collect();
        let screen = history.screen(board, log);
        let _ = term.draw(|f| view::draw(f, &screen));
        let next = Instant::now() + REFRESH;
        while !stop.load(Ordering::Acquire) {
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match event::poll(left.min(Duration::from_millis(50))) {
                Ok(true) => match event::read() {
                    Ok(Event::Key(k)) if is_ctrl_c(&k) => crate::sys::process::interrupt_self(),
                    Ok(Event::Resize(..)) => {
                        let _ = term.autoresize();
                        break;
                    }
                    _ => {}
                },
                Ok(false) => {}
                Err(_) => std::thread::sleep(left.min(Duration::from_millis(50))),
            }
        }
    }
}

fn is_ctrl_c(k: &event::KeyEvent) -> bool {
    k.kind == KeyEventKind::Press
        && k.modifiers.contains(KeyModifiers::CONTROL)
        && matches!(k.code, KeyCode::Char('c') | KeyCode::Char('C'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_lines_keep_a_tail_and_the_warnings() {
        let mut c = Captured::default();
        c.push(b"2026-01-01 00:00:00 - llmperf - INFO: one\n2026-01-01 00:00:00 - llmperf - WARN: two\n");
        for i in 0..100 {
            c.push(format!("2026-01-01 00:00:00 - llmperf - ERROR: e{i}\n").as_bytes());
        }
        assert_eq!(c.tail.len(), LOG_TAIL);
        assert!(c.tail.back().unwrap().ends_with("e99"));
        assert_eq!(c.warnings.len(), MAX_WARNINGS);
        assert!(c.warnings[0].ends_with("WARN: two"));
        assert_eq!(c.more_warnings, 101 - MAX_WARNINGS);
    }

    #[test]
    fn ctrl_c_is_the_only_key_that_interrupts() {
        let key = |code, modifiers| event::KeyEvent::new(code, modifiers);
        assert!(is_ctrl_c(&key(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        assert!(!is_ctrl_c(&key(KeyCode::Char('c'), KeyModifiers::NONE)));
        assert!(!is_ctrl_c(&key(KeyCode::Char('q'), KeyModifiers::CONTROL)));
    }
}

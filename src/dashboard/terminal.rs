//! The terminal while the dashboard owns it: raw mode, the alternate screen and a hidden cursor, set up
//! once and restored on every way out (the dashboard closing, a second Ctrl-C's immediate exit through
//! the shutdown's exit hook, a panic through the panic hook). Restoring twice is harmless.

use std::io::{BufWriter, Stderr, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

/// The dashboard's terminal: stderr, buffered so a frame goes out in a few writes.
pub type Term = Terminal<CrosstermBackend<BufWriter<Stderr>>>;

/// Whether the terminal is in the dashboard's state now.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Puts the terminal in the dashboard's state and returns it to draw on.
pub fn enter() -> std::io::Result<Term> {
    install_panic_hook();
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut err = std::io::stderr();
    if let Err(e) = execute!(err, terminal::EnterAlternateScreen, cursor::Hide) {
        restore();
        return Err(e);
    }
    let backend = CrosstermBackend::new(BufWriter::with_capacity(64 * 1024, std::io::stderr()));
    match Terminal::new(backend) {
        Ok(t) => Ok(t),
        Err(e) => {
            restore();
            Err(e)
        }
    }
}

/// Gives the terminal back as it was (main screen, cursor shown, cooked mode); does nothing when the
/// dashboard does not hold it.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut err = std::io::stderr();
    let _ = execute!(err, terminal::LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
    let _ = err.flush();
}

/// A panic while the dashboard holds the terminal restores it before the message is printed.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

//! Logging: evalscope's line format (`2026-01-01 12:00:00 - llmperf - INFO: message`) to stderr and, once
//! the run root exists, to `benchmark.log` too. Stderr lines pause the progress bar so they never tear it,
//! and go to a sink instead while a full-screen view owns the terminal ([`divert_stderr`]).

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

static LOG_FILE: Mutex<Option<File>> = Mutex::new(None);
static ACTIVE_BAR: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
static STDERR_SINK: Mutex<Option<StderrSink>> = Mutex::new(None);
static INIT: OnceLock<()> = OnceLock::new();

/// evalscope's format, with the level and any structured fields.
struct LineFormat {
    debug: bool,
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let now = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
        if self.debug {
            write!(
                w,
                "{now} - llmperf - {} - {}: ",
                meta.file().unwrap_or("?"),
                meta.level()
            )?;
        } else {
            write!(w, "{now} - llmperf - {}: ", meta.level())?;
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// What receives the log lines meant for stderr while a full-screen view owns the terminal.
pub type StderrSink = Box<dyn Fn(&[u8]) + Send>;

/// Writes to stderr (or its sink), pausing an active progress bar, and to `benchmark.log` when set.
#[derive(Clone, Copy)]
struct TeeWriter;

impl Write for TeeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let diverted = match STDERR_SINK.lock() {
            Ok(sink) => sink.as_ref().map(|sink| sink(buf)).is_some(),
            Err(_) => false,
        };
        let bar = ACTIVE_BAR.lock().ok().and_then(|b| b.clone());
        match bar {
            _ if diverted => {}
            Some(bar) => bar.suspend(|| io::stderr().write_all(buf))?,
            None => io::stderr().write_all(buf)?,
        }
        if let Ok(mut file) = LOG_FILE.lock() {
            if let Some(f) = file.as_mut() {
                f.write_all(buf)?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Ok(mut file) = LOG_FILE.lock() {
            if let Some(f) = file.as_mut() {
                f.flush()?;
            }
        }
        io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for TeeWriter {
    type Writer = TeeWriter;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

/// Installs the global subscriber once (INFO, or DEBUG with `--debug`). `RUST_LOG` is not consulted:
/// what is logged is part of the output format.
pub fn init(debug: bool) {
    INIT.get_or_init(|| {
        let level = if debug { Level::DEBUG } else { Level::INFO };
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .event_format(LineFormat { debug })
            .with_writer(TeeWriter)
            .try_init();
    });
}

/// From now on, log lines also go to `path` (appended).
pub fn set_log_file(path: &Path) -> io::Result<()> {
    let file = File::options().create(true).append(true).open(path)?;
    *LOG_FILE.lock().expect("log file lock") = Some(file);
    Ok(())
}

/// Stops writing to the log file (flushing it).
pub fn close_log_file() {
    if let Ok(mut f) = LOG_FILE.lock() {
        if let Some(mut file) = f.take() {
            let _ = file.flush();
        }
    }
}

/// From now on, log lines meant for stderr go to `sink` instead (`None`: to stderr again). The log file
/// still gets every line.
pub fn divert_stderr(sink: Option<StderrSink>) {
    *STDERR_SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = sink;
}

/// Registers the progress bar that log lines must pause (or none).
pub fn set_active_bar(bar: Option<indicatif::ProgressBar>) {
    *ACTIVE_BAR.lock().expect("bar lock") = bar;
}

//! Progress of one run: an indicatif bar on a terminal (requests done/total, req/s, elapsed/ETA); plain log
//! lines every 10 % when stderr is not a terminal (CI, pipes).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::logging;

/// Progress of the measured requests of one run.
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    failed: u64,
    warmup_done: u64,
    started: Instant,
    next_log_pct: u64,
    bar: Option<ProgressBar>,
}

fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}", s / 60, s % 60)
}

impl Progress {
    /// Progress for `total` measured requests, labelled like evalscope (`Processing[<run folder>]`).
    pub fn new(label: String, total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix} {percent:>3}% |{wide_bar}| {pos}/{len} [{elapsed_precise} < {eta_precise}, {per_sec}] {msg}",
                )
                .expect("valid template")
                .progress_chars("█▉▊▋▌▍▎▏ "),
            );
            bar.set_prefix(label.clone());
            logging::set_active_bar(Some(bar.clone()));
            bar
        });
        Progress {
            label,
            total,
            done: 0,
            failed: 0,
            warmup_done: 0,
            started: Instant::now(),
            next_log_pct: 10,
            bar,
        }
    }

    /// Restarts the clock at `sent`, when the first measured request to finish was sent (so the first
    /// line's rate is one request over its latency, not over the instant since it finished).
    pub fn start_clock_at(&mut self, sent: Instant) {
        self.started = sent.min(Instant::now());
        if let Some(bar) = &self.bar {
            bar.reset_elapsed();
        }
    }

    /// One warmup request finished.
    pub fn warmup_finished(&mut self) {
        self.warmup_done += 1;
        if let Some(bar) = &self.bar {
            bar.set_message(format!("warmup {} done", self.warmup_done));
        }
    }

    /// One measured request finished.
    pub fn finished(&mut self, success: bool) {
        self.done += 1;
        if !success {
            self.failed += 1;
        }
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                if self.failed > 0 {
                    bar.set_message(format!("{} failed", self.failed));
                }
            }
            None => {
                let pct = self.done * 100 / self.total.max(1);
                if pct >= self.next_log_pct || self.done == self.total {
                    self.next_log_pct = (pct / 10 + 1) * 10;
                    self.log_line();
                }
            }
        }
    }

    fn log_line(&self) {
        let elapsed = self.started.elapsed();
        let rate = self.done as f64 / elapsed.as_secs_f64().max(1e-9);
        let remaining = if rate > 0.0 {
            Duration::from_secs_f64((self.total - self.done.min(self.total)) as f64 / rate)
        } else {
            Duration::ZERO
        };
        tracing::info!(
            "{} {:>3}%| {}/{} [Elapsed: {} < Remaining: {}, {:.2}it/s]{}",
            self.label,
            self.done * 100 / self.total.max(1),
            self.done,
            self.total,
            hms(elapsed),
            hms(remaining),
            rate,
            if self.failed > 0 {
                format!(" ({} failed)", self.failed)
            } else {
                String::new()
            }
        );
    }

    /// Ends the bar (and logs the final line on a terminal too, so benchmark.log has it).
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish();
            logging::set_active_bar(None);
            self.log_line();
        }
    }
}

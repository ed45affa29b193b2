//! What the runs of one invocation add up to: an ERROR line for each run in which no request succeeded
//! (with the first error of each kind), and the invocation's verdict — exit 4
//! ([`Error::NothingSucceeded`]) when requests were measured and none of them succeeded, in any run of
//! the sweep or any SLA probe. A sweep in which some run succeeded ends as usual (exit 0).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::metrics::BenchmarkSummary;

/// Measured and successful requests over every run of the invocation (shared by the sweep's runs).
#[derive(Debug, Default)]
pub struct Tally {
    runs: AtomicU64,
    measured: AtomicU64,
    succeeded: AtomicU64,
}

impl Tally {
    /// Counts a finished run, and logs an ERROR line when it had requests and none succeeded.
    pub fn run_finished(&self, run_name: &str, summary: &BenchmarkSummary) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.measured
            .fetch_add(summary.total_requests, Ordering::Relaxed);
        self.succeeded
            .fetch_add(summary.success_requests, Ordering::Relaxed);
        if summary.total_requests > 0 && summary.success_requests == 0 {
            tracing::error!("{}", no_success_line(run_name, summary));
        }
    }

    /// `Ok` unless requests were measured and none of them succeeded.
    pub fn verdict(&self) -> Result<(), Error> {
        let measured = self.measured.load(Ordering::Relaxed);
        if measured > 0 && self.succeeded.load(Ordering::Relaxed) == 0 {
            return Err(Error::NothingSucceeded {
                requests: measured,
                runs: self.runs.load(Ordering::Relaxed),
            });
        }
        Ok(())
    }
}

/// `Run <name>: none of its N requests succeeded (N <kind>, …); first <kind> error: …`.
fn no_success_line(run_name: &str, s: &BenchmarkSummary) -> String {
    let kinds: Vec<String> = s
        .extras
        .failures_by_kind
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let mut line = format!(
        "Run {run_name}: none of its {} requests succeeded ({})",
        s.total_requests,
        kinds.join(", ")
    );
    for e in &s.extras.first_errors {
        line.push_str(&format!("; first {} error: {}", e.kind, e.line()));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{FirstError, SummaryExtras};

    fn summary(total: u64, success: u64) -> BenchmarkSummary {
        BenchmarkSummary {
            total_requests: total,
            success_requests: success,
            failed_requests: total - success,
            extras: SummaryExtras {
                failures_by_kind: vec![("http_status".into(), total - success)],
                first_errors: vec![FirstError {
                    kind: "http_status".into(),
                    status: Some(404),
                    excerpt: "HTTP 404 Not Found: no route".into(),
                }],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn nothing_succeeded_only_when_every_run_failed_every_request() {
        let tally = Tally::default();
        assert!(tally.verdict().is_ok(), "no run: nothing measured");
        tally.run_finished("a", &summary(4, 0));
        let e = tally.verdict().unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(
            e.to_string()
                .contains("all 4 measured requests of 1 run(s)"),
            "{e}"
        );
        tally.run_finished("b", &summary(4, 1));
        assert!(tally.verdict().is_ok(), "one success anywhere is a result");
    }

    #[test]
    fn the_error_line_names_the_run_the_kinds_and_the_first_error() {
        assert_eq!(
            no_success_line("parallel_1_number_4", &summary(4, 0)),
            "Run parallel_1_number_4: none of its 4 requests succeeded (4 http_status); first http_status error: HTTP 404 Not Found: no route"
        );
    }
}

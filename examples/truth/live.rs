//! The cost of watching a run (`live`): the timing-truth measurement at 256 streams and the client
//! ceiling at parallel 256, each with the client plain, with the terminal dashboard on (in a
//! pseudo-terminal), with its metrics endpoint scraped ten times a second, and with both. The modes run
//! in turn within each repeat, so a machine whose speed drifts moves them all alike.

use std::path::PathBuf;

use crate::procs::Watch;
use crate::sections::{accuracy_row, ceiling_row};
use crate::stats::Table;

/// The modes, in the order run.
const MODES: [(&str, Watch); 4] = [
    (
        "plain",
        Watch {
            dashboard: false,
            endpoint: false,
        },
    ),
    (
        "--ui dashboard",
        Watch {
            dashboard: true,
            endpoint: false,
        },
    ),
    (
        "--metrics-listen, scraped 10/s",
        Watch {
            dashboard: false,
            endpoint: true,
        },
    ),
    (
        "both",
        Watch {
            dashboard: true,
            endpoint: true,
        },
    ),
];

pub fn live_table(number: usize) -> Table {
    Table::new(
        &format!(
            "The cost of watching a run: TTFT error against the simulator's truth at 256 streams (ms; as the accuracy table), \
             and the client ceiling at parallel 256 (zero-delay simulator, 16-token streams, {number} requests)"
        ),
        &[
            "mode",
            "TTFT err mean",
            "p50",
            "p99",
            "send lag p99",
            "req/s",
            "client CPU µs/req",
        ],
        &[3, 3, 3, 3, 0, 1],
    )
}

/// One repeat of every mode; `fresh` gives a new empty folder per measurement.
pub fn live(table: &mut Table, rounds: usize, number: usize, fresh: &mut dyn FnMut() -> PathBuf) {
    for (label, watch) in MODES {
        let (acc, _) = accuracy_row(256, rounds, &fresh(), watch);
        let ceiling = ceiling_row(256, number, 1, &fresh(), watch);
        // accuracy_row: [joined, mean, p50, p99, …, send lag mean, p50, p99 (12), …]
        table.add(
            label,
            vec![acc[1], acc[2], acc[3], acc[12], ceiling[0], ceiling[1]],
        );
    }
}

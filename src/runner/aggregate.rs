//! The one owner of a run's results: receives every finished record, feeds the accumulator, the progress
//! display and the store, and logs the running summary every `--log-every-n-query` requests.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::metrics::Accumulator;
use crate::progress::Progress;
use crate::record::RequestRecord;
use crate::store::Store;

/// Consumes records until every sender is gone; returns the accumulator and the progress display.
pub async fn aggregate(
    mut records: mpsc::Receiver<RequestRecord>,
    mut acc: Accumulator,
    mut progress: Progress,
    store: Arc<Store>,
    log_every_n: u64,
) -> (Accumulator, Progress) {
    let mut measuring = false;
    while let Some(record) = records.recv().await {
        if record.is_warmup {
            progress.warmup_finished();
            continue;
        }
        if !measuring {
            measuring = true;
            progress.start_clock();
        }
        acc.add(&record);
        progress.finished(record.success);
        if acc.total() % log_every_n == 0 {
            tracing::info!("{}", acc.running_log_json());
        }
        store.insert(record);
    }
    (acc, progress)
}

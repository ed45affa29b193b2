//! The one owner of a run's results: receives every finished record, feeds the accumulator, the progress
//! display and the store, and logs the running summary every `--log-every-n-query` requests.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::metrics::Accumulator;
use crate::progress::Progress;
use crate::record::RequestRecord;
use crate::store::Store;

/// Most records handed to the store at once.
const STORE_BATCH: usize = 256;

/// Most records waiting for the store; beyond it the aggregator waits (and, through the bounded channel,
/// so do the requests), keeping memory bounded when the disk is slower than the server.
const MAX_STORE_BACKLOG: usize = 2048;

/// Consumes records until every sender is gone; returns the accumulator and the progress display.
///
/// Records go to the store in batches: whatever arrived while the previous records were being counted
/// (at most [`STORE_BATCH`]), handed over as soon as the channel is momentarily empty, so the writer thread
/// is woken once per batch rather than once per request, and a slow trickle is still stored at once.
/// (`recv` takes part in the runtime's cooperative budget, so a long backlog never starves request tasks.)
pub async fn aggregate(
    mut records: mpsc::Receiver<RequestRecord>,
    mut acc: Accumulator,
    mut progress: Progress,
    store: Arc<Store>,
    log_every_n: u64,
) -> (Accumulator, Progress) {
    let mut measuring = false;
    let mut batch: Vec<RequestRecord> = Vec::new();
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
        batch.push(record);
        if batch.len() >= STORE_BATCH || records.is_empty() {
            store.insert_batch(std::mem::take(&mut batch));
            while store.backlog() > MAX_STORE_BACKLOG {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    }
    if !batch.is_empty() {
        store.insert_batch(batch);
    }
    (acc, progress)
}

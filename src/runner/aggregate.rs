//! The one owner of a run's results: receives every finished record, feeds the accumulator, the progress
//! display and the store, and logs the running summary every `--log-every-n-query` requests.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::api::usage_fallback::UsageFallback;
use crate::metrics::Accumulator;
use crate::progress::Progress;
use crate::record::RequestRecord;
use crate::store::Store;

/// Consumes records until every sender is gone; returns the accumulator and the progress display.
/// `intended[i]` is request `i`'s intended prompt length; `counter` fills in token counts for responses
/// that carried no usage (once per finished request, here, never on the request path).
pub async fn aggregate(
    mut records: mpsc::Receiver<RequestRecord>,
    mut acc: Accumulator,
    mut progress: Progress,
    store: Arc<Store>,
    log_every_n: u64,
    intended: Vec<Option<u64>>,
    counter: UsageFallback,
) -> (Accumulator, Progress) {
    let mut measuring = false;
    while let Some(mut record) = records.recv().await {
        if record.is_warmup {
            progress.warmup_finished();
            continue;
        }
        record.intended_prompt_tokens = intended.get(record.index).copied().flatten();
        counter.fill(&mut record);
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

//! Heap per request: llmperf's live heap must not grow with the number of requests a run sends.
//!
//! This binary counts every allocation (its own global allocator, hence a test target of its own) and
//! runs `llmperf` in-process (client, request feed, aggregator, store, exact percentiles) against the
//! simulator, in this process too, over 200,000 tiny streamed requests. Once the bounded buffers are full
//! (8,192 values per percentile column, the request feed's look-ahead), the heap the run keeps is the same
//! after 60,000 requests as after 160,000; a per-request vector anywhere on the path shows as its bytes per
//! request times the 100,000 requests between. (SQLite allocates with libc's malloc, not counted here; its
//! page cache is capped.) It
//! catches what the RSS tests cannot see at a debug build's speed: the send-lag vector of the replay
//! fidelity keys (8 B per request, for every run) grew a 10 M-request soak by 80 MB and the RSS checks
//! missed it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clap::Parser;
use llmperf::sim::{SimConfig, SimServer};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only observe sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The lowest live heap (bytes) seen while the simulator's request count was in `[from, to)`.
fn min_live_while(sim: &SimServer, from: u64, to: u64, stop: &AtomicBool) -> Option<usize> {
    let mut low: Option<usize> = None;
    while !stop.load(Ordering::Relaxed) {
        let served = sim.requests_received();
        if served >= to {
            break;
        }
        if served >= from {
            let live = LIVE.load(Ordering::Relaxed);
            low = Some(low.map_or(live, |l| l.min(live)));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    low
}

#[test]
fn live_heap_does_not_grow_with_the_number_of_requests() {
    let sim = SimServer::start(SimConfig {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        output_tokens: 2,
        record_truth: false,
        ..SimConfig::default()
    })
    .expect("simulator starts");
    let out = tempfile::tempdir().expect("temporary directory");
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let dir = out.path().to_str().expect("UTF-8 path").to_string();
    let number: u64 = 200_000;
    let argv = [
        "llmperf",
        "--url",
        &url,
        "--model",
        "heap",
        "--prompt",
        "hi",
        "--max-tokens",
        "2",
        "--parallel",
        "8",
        "--number",
        &number.to_string(),
        "--log-every-n-query",
        "1000000000",
        "--no-timestamp",
        "--no-test-connection",
        "--outputs-dir",
        &dir,
    ];
    let cli = llmperf::cli::Cli::try_parse_from(argv).expect("valid flags");
    let stop = AtomicBool::new(false);
    // Two windows of 40,000 requests each, 100,000 apart; every bounded buffer is full before the first
    // (8,192 values per percentile column). The minimum of each window is taken where the queues and the
    // columns' in-memory parts have just drained, so it is the heap the run keeps, not what is in flight.
    let (early, late, code) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let early = min_live_while(&sim, 40_000, 80_000, &stop);
            let late = min_live_while(&sim, 140_000, 180_000, &stop);
            (early, late)
        });
        let code = llmperf::run(cli);
        stop.store(true, Ordering::Relaxed);
        let (early, late) = sampler.join().expect("sampler");
        (early, late, code)
    });
    assert_eq!(code, 0, "llmperf failed");
    let (early, late) = (
        early.expect("early window sampled"),
        late.expect("late window sampled"),
    );
    let per_request = (late as f64 - early as f64) / 100_000.0;
    eprintln!(
        "lowest live heap: {early} B at 40,000-80,000 requests, {late} B at 140,000-180,000 ({per_request:+.2} B per request)"
    );
    // One f64 per request kept anywhere would add 8 B per request.
    assert!(
        per_request < 2.0,
        "the live heap grew {per_request:.2} B per request ({early} -> {late} B)"
    );
}

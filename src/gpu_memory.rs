//! GPU memory of a local server (`--api local` / `local_vllm`), for the `max_gpu_memory_cost` column: while
//! the server runs, `nvidia-smi --query-gpu=memory.used` is sampled twice a second and the peak, summed over
//! the visible GPUs, is kept in GiB (evalscope sums `torch.cuda.max_memory_allocated` over the devices of its
//! in-process server). Each successful row stores the peak seen when it is written; without `nvidia-smi`
//! (or without a local server) the column stays 0.0, as in evalscope.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The peak so far, GiB, as `f64` bits (0.0 until a sampler has seen a value).
static PEAK_GIB_BITS: AtomicU64 = AtomicU64::new(0);

/// The peak GPU memory seen so far, GiB (0.0 without a sampler).
pub fn peak_gib() -> f64 {
    f64::from_bits(PEAK_GIB_BITS.load(Ordering::Relaxed))
}

/// Memory used on every visible GPU, summed, GiB; `None` without a working `nvidia-smi`.
fn used_gib() -> Option<f64> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mib: f64 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .sum();
    Some(mib / 1024.0)
}

fn record(gib: f64) {
    let _ = PEAK_GIB_BITS.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
        (gib > f64::from_bits(bits)).then_some(gib.to_bits())
    });
}

/// A running sampler; dropping it stops the thread (the peak is kept).
pub struct Sampler {
    stop: Arc<AtomicBool>,
}

impl Sampler {
    /// Starts sampling, or `None` when `nvidia-smi` gives no reading (no GPU visible).
    pub fn start() -> Option<Sampler> {
        record(used_gib()?);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("gpu-memory".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    if let Some(gib) = used_gib() {
                        record(gib);
                    }
                }
            })
            .ok()?;
        Some(Sampler { stop })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

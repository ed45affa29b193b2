//! The process's own resources: CPU time used (`getrusage`), the CPU time of the in-process simulator's
//! threads (so the client's share can be told apart), peak resident memory, the number of CPUs this
//! process may run on, and the open-file limit (`RLIMIT_NOFILE`), raised to its hard limit when a run
//! needs more sockets than the soft limit allows.
//!
//! Linux first: thread CPU times come from `/proc/self/task/*/stat`, peak RSS from `getrusage`
//! (`ru_maxrss`, KiB on Linux, bytes on macOS). Where a figure cannot be read it is `None` / 0, never an
//! error: diagnostics must not break a run.

use std::time::Duration;

mod error;
pub use error::ResourceError;

/// CPU time used by this process so far (user + system, every thread, including threads that have ended).
pub fn process_cpu() -> Duration {
    rusage().map_or(Duration::ZERO, |r| r.cpu)
}

/// Peak resident set size of this process so far, in bytes: `VmHWM` on Linux (it belongs to the address
/// space, so it starts afresh at `exec`; `ru_maxrss` keeps the parent's high-water mark across
/// `fork` + `exec`), else `ru_maxrss`.
pub fn peak_rss_bytes() -> u64 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        if let Some(kib) = kib {
            return kib * 1024;
        }
    }
    rusage().map_or(0, |r| r.max_rss_bytes)
}

struct Usage {
    cpu: Duration,
    max_rss_bytes: u64,
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

fn rusage() -> Option<Usage> {
    let ru = crate::sys::rusage_self()?;
    let max_rss = ru.ru_maxrss.max(0) as u64;
    let max_rss_bytes = if cfg!(target_os = "macos") {
        max_rss
    } else {
        max_rss * 1024
    };
    Some(Usage {
        cpu: timeval(ru.ru_utime) + timeval(ru.ru_stime),
        max_rss_bytes,
    })
}

/// CPU time used so far by this process's live threads whose name starts with `prefix` (e.g. the
/// simulator's `llmperf-sim` threads). Zero where `/proc` is not available.
pub fn threads_cpu(prefix: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let tick = clock_tick_s();
    let mut total_ticks = 0u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        if let Some((name, ticks)) = parse_task_stat(&stat) {
            if name.starts_with(prefix) {
                total_ticks += ticks;
            }
        }
    }
    Duration::from_secs_f64(total_ticks as f64 * tick)
}

/// Scheduler statistics of one client thread (Linux `schedstat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSched {
    /// Thread id.
    pub tid: u32,
    /// Thread name (`comm`).
    pub name: String,
    /// Time on a CPU.
    pub cpu: Duration,
    /// Time ready to run but given no CPU (waiting on a run queue).
    pub wait: Duration,
    /// Times it was scheduled onto a CPU.
    pub slices: u64,
}

/// [`ThreadSched`] of each of the client's threads (the simulator's excluded) so far, from
/// `/proc/self/task/*/schedstat`. Empty where unavailable.
pub fn client_threads_sched() -> Vec<ThreadSched> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let path = task.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        let Some((name, _)) = parse_task_stat(&stat) else {
            continue;
        };
        if name.starts_with(SIM_THREAD_PREFIX) {
            continue;
        }
        let Ok(sched) = std::fs::read_to_string(path.join("schedstat")) else {
            continue;
        };
        // "cpu_ns wait_ns timeslices"
        let f: Vec<u64> = sched
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        let tid = task.file_name().to_string_lossy().parse::<u32>().ok();
        if let (Some(tid), [cpu, wait, slices, ..]) = (tid, f.as_slice()) {
            out.push(ThreadSched {
                tid,
                name: name.to_string(),
                cpu: Duration::from_nanos(*cpu),
                wait: Duration::from_nanos(*wait),
                slices: *slices,
            });
        }
    }
    out
}

/// What the client's threads did between two [`client_threads_sched`] readings (threads that started in
/// between count from zero; threads that ended are lost).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedDelta {
    /// Total wait on run queues.
    pub wait: Duration,
    /// Times scheduled onto a CPU.
    pub slices: u64,
    /// The thread that was busy (running or waiting for a CPU) the longest, and for how long.
    pub busiest: Option<(String, Duration)>,
}

/// The change between two readings.
pub fn sched_between(before: &[ThreadSched], after: &[ThreadSched]) -> SchedDelta {
    let mut d = SchedDelta::default();
    for now in after {
        let then = before.iter().find(|t| t.tid == now.tid);
        let cpu = now
            .cpu
            .saturating_sub(then.map_or(Duration::ZERO, |t| t.cpu));
        let wait = now
            .wait
            .saturating_sub(then.map_or(Duration::ZERO, |t| t.wait));
        d.wait += wait;
        d.slices += now.slices.saturating_sub(then.map_or(0, |t| t.slices));
        if d.busiest.as_ref().is_none_or(|(_, b)| cpu + wait > *b) {
            d.busiest = Some((now.name.clone(), cpu + wait));
        }
    }
    d
}

/// `(comm, utime + stime in clock ticks)` from one `/proc/<pid>/task/<tid>/stat` line. The name sits in
/// parentheses and may itself contain spaces or parentheses, so the fields are counted from the last `)`.
fn parse_task_stat(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?;
    // After ") ": state(3) ppid(4) … utime(14) stime(15); field 3 is index 0 here.
    let mut fields = stat.get(close + 2..)?.split(' ');
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((name, utime + stime))
}

fn clock_tick_s() -> f64 {
    let hz = crate::sys::clock_ticks_per_s();
    if hz > 0 {
        1.0 / hz as f64
    } else {
        0.01
    }
}

/// CPU time used so far by the client: the whole process minus the built-in simulator's threads (which
/// run in-process for `--api mock`).
pub fn client_cpu() -> Duration {
    process_cpu().saturating_sub(threads_cpu(SIM_THREAD_PREFIX))
}

/// Name prefix of the simulator's threads (`llmperf-sim`, `llmperf-sim-worker`).
pub const SIM_THREAD_PREFIX: &str = "llmperf-sim";

/// CPUs this process may run on (its affinity mask), at least 1.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The open-file limit (`RLIMIT_NOFILE`): (soft, hard). `None` for "unlimited" or unreadable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimit {
    /// The limit in force.
    pub soft: Option<u64>,
    /// The most the soft limit may be raised to without privileges.
    pub hard: Option<u64>,
}

// `rlim_t` is `u64` on the platforms we build for; the casts keep other widths compiling.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn limit_value(v: libc::rlim_t) -> Option<u64> {
    (v != libc::RLIM_INFINITY).then_some(v as u64)
}

fn get_file_limit() -> Option<libc::rlimit> {
    crate::sys::file_limit()
}

#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn to_rlim(v: u64) -> libc::rlim_t {
    v as libc::rlim_t
}

/// The current open-file limit.
pub fn file_limit() -> FileLimit {
    match get_file_limit() {
        Some(rl) => FileLimit {
            soft: limit_value(rl.rlim_cur),
            hard: limit_value(rl.rlim_max),
        },
        None => FileLimit {
            soft: None,
            hard: None,
        },
    }
}

/// File descriptors a run needs beyond one per connection: stdio, the log and database files, the
/// runtime's epoll and wake-up descriptors, DNS and the connection test.
pub const FD_HEADROOM: u64 = 64;

/// Raises the soft open-file limit to the hard limit when `needed` descriptors exceed it. Returns the limit
/// now in force, or an error text naming the limit when even the hard limit is too small (or it could not
/// be raised).
pub fn ensure_file_limit(needed: u64) -> Result<FileLimit, ResourceError> {
    let Some(mut rl) = get_file_limit() else {
        return Ok(file_limit());
    };
    let soft = limit_value(rl.rlim_cur);
    if soft.is_none_or(|s| s >= needed) {
        return Ok(file_limit());
    }
    let hard = limit_value(rl.rlim_max);
    let target = match hard {
        Some(h) => h.min(needed.max(soft.unwrap_or(0))),
        None => needed,
    };
    if target > soft.unwrap_or(0) {
        rl.rlim_cur = to_rlim(target);
        crate::sys::set_file_limit(&rl);
    }
    let now = file_limit();
    if now.soft.is_none_or(|s| s >= needed) {
        return Ok(now);
    }
    Err(ResourceError::FileLimit {
        needed,
        headroom: FD_HEADROOM,
        soft: now.soft,
        hard: now.hard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stat_fields_are_counted_from_the_last_parenthesis() {
        let stat = "1234 (llmperf-sim (x)) S 1 2 3 4 5 6 7 8 9 10 170 30 0 0 20 0 1 0";
        assert_eq!(parse_task_stat(stat), Some(("llmperf-sim (x)", 200)));
        assert_eq!(parse_task_stat("garbage"), None);
    }

    #[test]
    fn cpu_and_rss_are_read() {
        let start = process_cpu();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu() >= start);
        assert!(peak_rss_bytes() > 1024 * 1024);
        assert!(available_cpus() >= 1);
    }

    #[test]
    fn a_small_need_is_already_met() {
        let limit = ensure_file_limit(16).expect("16 files are always allowed");
        assert!(limit.soft.is_none_or(|s| s >= 16));
    }
}

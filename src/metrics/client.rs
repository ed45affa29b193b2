//! Client self-diagnostics: how much CPU the client used, how late it sent requests (send lag: actual −
//! intended send time), and — in open loop — TTFT and latency measured from the *intended* send time
//! (coordinated omission: a client that falls behind its schedule would otherwise hide the queueing it
//! caused). From these, whether the client itself limited the run.
//!
//! The run is flagged as client-limited when
//! * the client used more than [`CPU_LIMIT_PCT`] % of the CPUs it may run on (it had no headroom left), or
//! * one of its threads was running or waiting for a CPU more than [`CPU_LIMIT_PCT`] % of the run (it was
//!   saturated, whoever held the other CPUs: reads then wait in socket buffers before they are stamped), or
//! * its threads waited on average more than [`SCHED_DELAY_LIMIT`] for a CPU each time they became ready
//!   to run (Linux schedstat: other processes held the CPUs), so its time stamps were taken late, or
//! * the median request had bytes waiting more than [`READ_LAG_LIMIT`] in its socket before the client
//!   read them (it was falling behind its streams), or
//! * send lag p99 exceeds [`LAG_LIMIT_CLOSED`] in closed loop / [`LAG_LIMIT_OPEN`] in open loop. Closed loop:
//!   the intended time is when a worker's previous response had been read, so the lag is the client's own
//!   turnaround (delivering the record, taking the next request), normally microseconds; 5 ms of it is a
//!   TTFT-sized distortion. Open loop: the intended time is the schedule slot, and 1 ms late at p99 already
//!   reshapes a Poisson arrival process at the rates people test.

use std::time::Duration;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::spill::SortedSpill;
use crate::pyjson;
use crate::record::RequestRecord;

/// CPU use (share of all available CPUs) above which the client counts as saturated.
pub const CPU_LIMIT_PCT: f64 = 90.0;

/// Mean wait for a CPU each time a client thread became ready to run, above which its time stamps count as
/// taken late (other processes held the CPUs).
pub const SCHED_DELAY_LIMIT: Duration = Duration::from_millis(1);

/// Send lag p99 above which a closed-loop run counts as client-limited.
pub const LAG_LIMIT_CLOSED: Duration = Duration::from_millis(5);

/// Send lag p99 above which an open-loop run counts as client-limited.
pub const LAG_LIMIT_OPEN: Duration = Duration::from_millis(1);

/// Median read lag (per request, its longest wait between bytes arriving and the client reading them)
/// above which a run counts as client-limited: chunks are timed at their arrival, but chunks that wait
/// to be read together share the last one's arrival time, which blurs ITL and can delay TTFT.
pub const READ_LAG_LIMIT: Duration = Duration::from_millis(5);

/// Per-request timings kept for the diagnostics (seconds), measured requests only; exact percentiles in
/// bounded memory (spilled like the percentile table's columns).
#[derive(Debug)]
pub(crate) struct ClientTiming {
    /// Send lag of every measured request.
    send_lag: SortedSpill,
    /// Read lag of every measured request.
    read_lag: SortedSpill,
    /// Successful requests: first output (or the whole response, non-stream) − intended send time.
    ttft_from_schedule: SortedSpill,
    /// Successful requests: completion − intended send time.
    latency_from_schedule: SortedSpill,
    /// Running sums of the two above, in arrival order, and how many.
    ttft_sum: f64,
    latency_sum: f64,
    n_success: u64,
    n: u64,
}

impl ClientTiming {
    /// No timings yet; at most `cap` values per column in memory, spilling to `dir`.
    pub fn new(cap: usize, dir: Option<Arc<PathBuf>>) -> ClientTiming {
        let col = || SortedSpill::new(cap, dir.clone());
        ClientTiming {
            send_lag: col(),
            read_lag: col(),
            ttft_from_schedule: col(),
            latency_from_schedule: col(),
            ttft_sum: 0.0,
            latency_sum: 0.0,
            n_success: 0,
            n: 0,
        }
    }

    /// The send lags' nearest-rank values at each of [`super::nearest_rank::PERCENTILES`] (NaN when none).
    pub fn send_lag_percentiles(&self) -> [f64; 11] {
        self.send_lag.percentiles()
    }

    /// Notes one measured record.
    pub fn add(&mut self, r: &RequestRecord) {
        self.n += 1;
        self.send_lag.push(r.send_lag_s());
        self.read_lag.push(r.read_lag.as_secs_f64());
        if r.success {
            let lead = r
                .sent_at
                .saturating_duration_since(r.scheduled_at)
                .as_secs_f64();
            let (ttft, latency) = (lead + r.ttft_s(), lead + r.latency_s());
            self.ttft_from_schedule.push(ttft);
            self.latency_from_schedule.push(latency);
            self.ttft_sum += ttft;
            self.latency_sum += latency;
            self.n_success += 1;
        }
    }

    /// Whether any record was noted.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bytes written to disk so far.
    pub fn disk_bytes(&self) -> u64 {
        [
            &self.send_lag,
            &self.read_lag,
            &self.ttft_from_schedule,
            &self.latency_from_schedule,
        ]
        .into_iter()
        .map(SortedSpill::disk_bytes)
        .sum()
    }
}

/// CPU used by the client over a window of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuUse {
    /// CPU time (user + system) of the client's threads in the window.
    pub cpu: Duration,
    /// What the scheduler did with the client's threads in the window (Linux schedstat; empty where
    /// unavailable).
    pub sched: crate::resources::SchedDelta,
    /// The window's wall-clock length.
    pub wall: Duration,
    /// CPUs the process may run on.
    pub cpus: usize,
}

/// TTFT and latency from the intended send time (open loop); serialised as its summary keys.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FromSchedule {
    /// Mean TTFT, ms.
    #[serde(rename = "Avg TTFT From Intended Send (ms)")]
    pub avg_ttft_ms: f64,
    /// Median TTFT, ms.
    #[serde(rename = "P50 TTFT From Intended Send (ms)")]
    pub p50_ttft_ms: f64,
    /// p99 TTFT, ms.
    #[serde(rename = "P99 TTFT From Intended Send (ms)")]
    pub p99_ttft_ms: f64,
    /// Mean latency, s.
    #[serde(rename = "Avg Latency From Intended Send (s)")]
    pub avg_latency_s: f64,
    /// Median latency, s.
    #[serde(rename = "P50 Latency From Intended Send (s)")]
    pub p50_latency_s: f64,
    /// p99 latency, s.
    #[serde(rename = "P99 Latency From Intended Send (s)")]
    pub p99_latency_s: f64,
}

/// The client's view of itself for one run (extra summary keys, console rows, warning).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientDiagnostics {
    /// Client CPU time over wall time, % of one core.
    pub cpu_pct_one_core: f64,
    /// The same, % of all CPUs available to the process.
    pub cpu_pct_all_cores: f64,
    /// CPUs available to the process.
    pub cpus: usize,
    /// Mean wait for a CPU each time a client thread became ready to run, ms.
    pub sched_delay_ms: f64,
    /// The client thread busy (running, or ready and waiting for a CPU) the largest share of the run, and
    /// that share, %.
    pub busiest_thread: Option<(String, f64)>,
    /// Send lag median, ms.
    pub send_lag_p50_ms: f64,
    /// Send lag p99, ms.
    pub send_lag_p99_ms: f64,
    /// Read lag (bytes waiting in the socket before the client read them) median, ms.
    pub read_lag_p50_ms: f64,
    /// Read lag p99, ms.
    pub read_lag_p99_ms: f64,
    /// Open loop: TTFT and latency from the intended send time.
    pub from_schedule: Option<FromSchedule>,
    /// Why the client limited the run (empty when it did not).
    pub limits: Vec<String>,
}

impl ClientDiagnostics {
    /// The warning line for a client-limited run, if it was.
    pub fn warning(&self) -> Option<String> {
        self.limit_message().map(|m| format!("WARNING: {m}"))
    }

    /// The warning without its `WARNING: ` label, for a log line whose level already says it.
    pub fn limit_message(&self) -> Option<String> {
        (!self.limits.is_empty()).then(|| {
            format!(
                "the client itself limited this run ({}): its timings include client-side delay. \
                 Lower --parallel / --rate, or run llmperf on a less loaded machine.",
                self.limits.join("; ")
            )
        })
    }
}

/// The summary keys of [`ClientDiagnostics`], in the order the run's summary file writes them.
#[derive(Serialize)]
struct ClientKeys<'a> {
    #[serde(rename = "Client CPU (% of one core)")]
    cpu_pct_one_core: f64,
    #[serde(rename = "Client CPU (% of all cores)")]
    cpu_pct_all_cores: f64,
    #[serde(rename = "Client Scheduling Delay (ms)")]
    sched_delay_ms: f64,
    #[serde(
        rename = "Client Busiest Thread (%)",
        skip_serializing_if = "Option::is_none"
    )]
    busiest_thread_pct: Option<f64>,
    #[serde(rename = "Send Lag P50 (ms)")]
    send_lag_p50_ms: f64,
    #[serde(rename = "Send Lag P99 (ms)")]
    send_lag_p99_ms: f64,
    #[serde(rename = "Read Lag P50 (ms)")]
    read_lag_p50_ms: f64,
    #[serde(rename = "Read Lag P99 (ms)")]
    read_lag_p99_ms: f64,
    /// Written only when some request had a TTFT.
    #[serde(flatten)]
    from_schedule: Option<&'a FromSchedule>,
    #[serde(rename = "Client Limited")]
    limited: bool,
    #[serde(rename = "Client Warning", skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

impl Serialize for ClientDiagnostics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ClientKeys {
            cpu_pct_one_core: self.cpu_pct_one_core,
            cpu_pct_all_cores: self.cpu_pct_all_cores,
            sched_delay_ms: self.sched_delay_ms,
            busiest_thread_pct: self.busiest_thread.as_ref().map(|(_, pct)| *pct),
            send_lag_p50_ms: self.send_lag_p50_ms,
            send_lag_p99_ms: self.send_lag_p99_ms,
            read_lag_p50_ms: self.read_lag_p50_ms,
            read_lag_p99_ms: self.read_lag_p99_ms,
            from_schedule: self
                .from_schedule
                .as_ref()
                .filter(|f| f.avg_ttft_ms.is_finite()),
            limited: !self.limits.is_empty(),
            warning: self.warning(),
        }
        .serialize(s)
    }
}

/// `sum / n`, NaN when nothing was counted.
fn mean(sum: f64, n: u64) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// Indexes of p50 and p99 in [`super::nearest_rank::PERCENTILES`].
const P50: usize = 5;
const P99: usize = 9;

/// Diagnostics from the kept timings and the CPU window (`open_loop`: the run followed a schedule).
pub(crate) fn diagnose(t: &ClientTiming, cpu: CpuUse, open_loop: bool) -> ClientDiagnostics {
    let wall = cpu.wall.as_secs_f64();
    let one_core = if wall > 0.0 {
        cpu.cpu.as_secs_f64() / wall * 100.0
    } else {
        0.0
    };
    let all_cores = one_core / cpu.cpus.max(1) as f64;
    let sched_delay_ms = if cpu.sched.slices == 0 {
        0.0
    } else {
        cpu.sched.wait.as_secs_f64() * 1e3 / cpu.sched.slices as f64
    };
    let busiest = cpu.sched.busiest.as_ref().map(|(name, busy)| {
        let pct = if wall > 0.0 {
            busy.as_secs_f64() / wall * 100.0
        } else {
            0.0
        };
        (name.clone(), pct)
    });
    let lag = t.send_lag.percentiles();
    let lag_p50 = lag[P50] * 1e3;
    let lag_p99 = lag[P99] * 1e3;
    let read_lag = t.read_lag.percentiles();
    let read_lag_p50 = read_lag[P50] * 1e3;
    let from_schedule = open_loop.then(|| {
        let ttft = t.ttft_from_schedule.percentiles();
        let latency = t.latency_from_schedule.percentiles();
        FromSchedule {
            avg_ttft_ms: pyjson::round(mean(t.ttft_sum, t.n_success) * 1e3, 2),
            p50_ttft_ms: pyjson::round(ttft[P50] * 1e3, 2),
            p99_ttft_ms: pyjson::round(ttft[P99] * 1e3, 2),
            avg_latency_s: pyjson::round(mean(t.latency_sum, t.n_success), 4),
            p50_latency_s: pyjson::round(latency[P50], 4),
            p99_latency_s: pyjson::round(latency[P99], 4),
        }
    });
    let mut limits = Vec::new();
    if all_cores > CPU_LIMIT_PCT {
        limits.push(format!(
            "client CPU {all_cores:.0}% of {} CPU(s) > {CPU_LIMIT_PCT:.0}%",
            cpu.cpus
        ));
    }
    if let Some((name, pct)) = busiest.as_ref().filter(|(_, pct)| *pct > CPU_LIMIT_PCT) {
        limits.push(format!(
            "client thread {name} was running or waiting for a CPU {pct:.0}% of the run > \
             {CPU_LIMIT_PCT:.0}%"
        ));
    }
    let sched_limit_ms = SCHED_DELAY_LIMIT.as_secs_f64() * 1e3;
    if sched_delay_ms > sched_limit_ms {
        limits.push(format!(
            "client threads waited {sched_delay_ms:.2} ms on average for a CPU each time they woke > \
             {sched_limit_ms:.0} ms (other processes)"
        ));
    }
    let lag_limit = if open_loop {
        LAG_LIMIT_OPEN
    } else {
        LAG_LIMIT_CLOSED
    };
    let lag_limit_ms = lag_limit.as_secs_f64() * 1e3;
    if lag_p99 > lag_limit_ms {
        limits.push(format!(
            "send lag p99 {lag_p99:.2} ms > {lag_limit_ms:.0} ms"
        ));
    }
    let read_limit_ms = READ_LAG_LIMIT.as_secs_f64() * 1e3;
    if read_lag_p50 > read_limit_ms {
        limits.push(format!(
            "read lag p50 {read_lag_p50:.2} ms > {read_limit_ms:.0} ms (responses waited in the socket \
             for the client; chunks read together share one time stamp)"
        ));
    }
    ClientDiagnostics {
        cpu_pct_one_core: pyjson::round(one_core, 2),
        cpu_pct_all_cores: pyjson::round(all_cores, 2),
        cpus: cpu.cpus,
        sched_delay_ms: pyjson::round(sched_delay_ms, 4),
        busiest_thread: busiest.map(|(n, p)| (n, pyjson::round(p, 2))),
        send_lag_p50_ms: pyjson::round(lag_p50, 4),
        send_lag_p99_ms: pyjson::round(lag_p99, 4),
        read_lag_p50_ms: pyjson::round(read_lag_p50, 4),
        read_lag_p99_ms: pyjson::round(read_lag[P99] * 1e3, 4),
        from_schedule,
        limits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(values: &[f64]) -> SortedSpill {
        let mut s = SortedSpill::new(2, None);
        values.iter().for_each(|&v| s.push(v));
        s
    }

    fn timing(lags_ms: &[f64]) -> ClientTiming {
        let lags: Vec<f64> = lags_ms.iter().map(|l| l / 1e3).collect();
        ClientTiming {
            send_lag: col(&lags),
            read_lag: col(&[0.001, 0.002, 0.030]),
            ttft_from_schedule: col(&[0.050, 0.060, 0.070]),
            latency_from_schedule: col(&[0.5, 0.6, 0.7]),
            ttft_sum: 0.050 + 0.060 + 0.070,
            latency_sum: 0.5 + 0.6 + 0.7,
            n_success: 3,
            n: lags.len() as u64,
        }
    }

    fn cpu(cpu_ms: u64, wall_ms: u64, cpus: usize) -> CpuUse {
        CpuUse {
            cpu: Duration::from_millis(cpu_ms),
            sched: Default::default(),
            wall: Duration::from_millis(wall_ms),
            cpus,
        }
    }

    #[test]
    fn waiting_for_a_cpu_is_flagged() {
        let mut c = cpu(300, 1000, 2);
        c.sched = crate::resources::SchedDelta {
            wait: Duration::from_millis(100),
            slices: 100,
            busiest: Some(("tokio-rt-worker".into(), Duration::from_millis(400))),
        };
        let d = diagnose(&timing(&[0.01]), c.clone(), false);
        assert_eq!(d.sched_delay_ms, 1.0);
        assert_eq!(d.busiest_thread, Some(("tokio-rt-worker".into(), 40.0)));
        assert!(d.limits.is_empty(), "at the limit is fine");
        c.sched.slices = 40;
        c.sched.busiest = Some(("llmperf-store".into(), Duration::from_millis(950)));
        let d = diagnose(&timing(&[0.01]), c, false);
        assert_eq!(d.sched_delay_ms, 2.5);
        let w = d.warning().unwrap();
        assert!(w.contains("waited 2.50 ms on average"), "{w}");
        assert!(
            w.contains("client thread llmperf-store was running or waiting for a CPU 95%"),
            "{w}"
        );
    }

    #[test]
    fn responses_waiting_to_be_read_are_flagged() {
        let mut t = timing(&[0.01]);
        t.read_lag = col(&[0.004, 0.005, 0.005]);
        assert!(diagnose(&t, cpu(100, 1000, 2), false).limits.is_empty());
        t.read_lag = col(&[0.002, 0.009, 0.300]);
        let w = diagnose(&t, cpu(100, 1000, 2), false).warning().unwrap();
        assert!(w.contains("read lag p50 9.00 ms > 5 ms"), "{w}");
    }

    #[test]
    fn healthy_run_has_no_warning() {
        let d = diagnose(&timing(&[0.01, 0.02, 0.03]), cpu(500, 1000, 2), false);
        assert_eq!(d.cpu_pct_one_core, 50.0);
        assert_eq!(d.cpu_pct_all_cores, 25.0);
        assert_eq!(d.send_lag_p50_ms, 0.02);
        assert_eq!(d.send_lag_p99_ms, 0.03);
        assert_eq!((d.read_lag_p50_ms, d.read_lag_p99_ms), (2.0, 30.0));
        assert!(d.from_schedule.is_none());
        assert_eq!(d.warning(), None);
    }

    #[test]
    fn saturated_cpu_or_late_sends_are_flagged() {
        let d = diagnose(&timing(&[0.01]), cpu(1900, 1000, 2), false);
        assert_eq!(d.limits.len(), 1);
        assert!(d.warning().unwrap().contains("client CPU 95% of 2 CPU(s)"));
        let d = diagnose(&timing(&[1.0, 6.0]), cpu(100, 1000, 2), false);
        assert!(d.warning().unwrap().contains("send lag p99 6.00 ms > 5 ms"));
        // 2 ms is fine in closed loop, not in open loop.
        assert!(diagnose(&timing(&[2.0]), cpu(100, 1000, 2), false)
            .limits
            .is_empty());
        let open = diagnose(&timing(&[2.0]), cpu(100, 1000, 2), true);
        assert!(open.warning().unwrap().contains("> 1 ms"));
        let s = open.from_schedule.unwrap();
        assert_eq!(
            (s.avg_ttft_ms, s.p50_ttft_ms, s.p99_ttft_ms),
            (60.0, 60.0, 70.0)
        );
        assert_eq!((s.avg_latency_s, s.p99_latency_s), (0.6, 0.7));
    }
}

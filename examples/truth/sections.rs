//! The four measurements: timing truth against the simulator's ground truth, the client's ceiling
//! against a zero-delay simulator, peak memory with many streams held open, and open-loop send precision.
//! Each run starts a fresh simulator process and a fresh llmperf process under a temporary directory.

use std::path::Path;

use llmperf::sim::join;

use crate::procs::{
    run_client, run_client_with, run_dir, summary, ClientStats, SimProcess, SimSpec, Watch,
};
use crate::stats::{dist, Table};

fn s(v: impl ToString) -> String {
    v.to_string()
}

/// Flags every run shares: fixed prompt, exact output length, streaming, no pause between runs.
fn common(url: &str, tokens: u32) -> Vec<String> {
    vec![
        s("--url"),
        s(url),
        s("--model"),
        s("truth"),
        s("--prompt"),
        s("hello world"),
        s("--max-tokens"),
        s(tokens),
        s("--stream"),
        s("--extra-args"),
        s(r#"{"ignore_eos": true}"#),
        s("--sleep-interval"),
        s("0"),
    ]
}

fn check(stats: &ClientStats, dir: &Path) {
    assert_eq!(
        stats.exit_code,
        0,
        "llmperf failed; see {}",
        dir.join("client.log").display()
    );
}

/// Client TTFT − true TTFT, ITL error and send lag at one concurrency (TTFT 50 ms, ITL 10 ms, 64 tokens).
/// Returns whether the simulator ran under real-time scheduling.
pub fn accuracy(table: &mut Table, conc: usize, rounds: usize, dir: &Path) -> bool {
    let (row, sim_rt) = accuracy_row(conc, rounds, dir, Watch::default());
    table.add(&conc.to_string(), row);
    sim_rt
}

/// The values of one row of [`accuracy_table`], measured with the client watched as `watch` says, and
/// whether the simulator ran under real-time scheduling.
pub fn accuracy_row(conc: usize, rounds: usize, dir: &Path, watch: Watch) -> (Vec<f64>, bool) {
    let sim = SimProcess::spawn(
        SimSpec {
            ttft_ms: 50.0,
            itl_ms: 10.0,
            tokens: 64,
            threads: 2,
            truth: true,
            rt: true,
        },
        dir,
    );
    let number = (conc * rounds).max(8);
    let mut args = common(&sim.url(), 64);
    args.extend([
        s("--parallel"),
        s(conc),
        s("--number"),
        s(number),
        s("--warmup-num"),
        s(conc),
    ]);
    let (stats, _) = watch.run(&args, dir);
    let sim_rt = sim.rt;
    let (truth, _) = sim.finish();
    check(&stats, dir);
    let rows = join::read_client_rows(&run_dir(dir).join("benchmark_data.db")).expect("rows");
    let joined = join::join(rows, &truth);
    let (mut ttft_err, mut itl_err, mut itl_abs, mut lag, mut transit, mut delivery) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut sim_read = vec![];
    for (row, t) in &joined.pairs {
        let (Some(client_ttft), Some(first)) = (row.ttft_s(), t.first_token_s) else {
            continue;
        };
        // The server's clock starts when the request reached its socket: its own wake-up and parsing
        // (`sim read`) are server time, which any client sees.
        let arrived = t.arrived_s.unwrap_or(t.received_s);
        ttft_err.push((client_ttft - (first - arrived)) * 1e3);
        transit.push((arrived - row.send_s) * 1e3);
        sim_read.push((t.received_s - arrived) * 1e3);
        delivery.push((row.chunk_times_s[0] - first) * 1e3);
        lag.push(row.send_lag_s() * 1e3);
        if row.chunk_times_s.len() == t.chunk_times_s.len() {
            for (c, w) in row.chunk_times_s.windows(2).zip(t.chunk_times_s.windows(2)) {
                let e = ((c[1] - c[0]) - (w[1] - w[0])) * 1e3;
                itl_err.push(e);
                itl_abs.push(e.abs());
            }
        }
    }
    let joined_n = joined.pairs.len() as f64;
    let sum = summary(dir);
    let wait = sum["Client Scheduling Delay (ms)"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let read_lag_p99 = sum["Read Lag P99 (ms)"].as_f64().unwrap_or(f64::NAN);
    let limited = f64::from(u8::from(sum["Client Limited"] == true));
    let (t, a, l) = (dist(ttft_err), dist(itl_abs), dist(lag));
    let itl_mean = dist(itl_err).mean;
    (
        vec![
            joined_n,
            t.mean,
            t.p50,
            t.p99,
            dist(transit).mean,
            dist(sim_read).mean,
            dist(delivery).mean,
            itl_mean,
            a.p50,
            a.p99,
            l.mean,
            l.p50,
            l.p99,
            read_lag_p99,
            wait,
            limited,
        ],
        sim_rt,
    )
}

pub fn accuracy_table() -> Table {
    Table::new(
        "Timing error against the simulator's ground truth (ms; TTFT 50 ms, ITL 10 ms, 64 tokens, warmup = concurrency; \
         true TTFT = first token written − request arrival at the simulator's socket (kernel stamp); \
         req transit = that arrival − client send; sim read = simulator parse − arrival (server time, in the true TTFT); 1st-chunk delivery = client stamp of the first chunk (its arrival at the socket) − simulator write; \
         read lag = how long bytes waited in the socket before llmperf read them, from its summary)",
        &[
            "streams",
            "joined",
            "TTFT err mean",
            "p50",
            "p99",
            "req transit",
            "sim read",
            "1st-chunk delivery",
            "ITL err mean",
            "|ITL err| p50",
            "p99",
            "send lag mean",
            "p50",
            "p99",
            "read lag p99",
            "client sched. delay",
            "flagged",
        ],
        &[0, 3, 3, 3, 3, 3, 3, 4, 3, 3, 3, 3, 3, 3, 3, 0],
    )
}

/// Requests per second and client CPU per request against a zero-delay simulator (16-token streams).
pub fn ceiling(table: &mut Table, parallel: usize, number: usize, sim_threads: usize, dir: &Path) {
    let row = ceiling_row(parallel, number, sim_threads, dir, Watch::default());
    table.add(&parallel.to_string(), row);
}

/// The values of one row of [`ceiling_table`], measured with the client watched as `watch` says.
pub fn ceiling_row(
    parallel: usize,
    number: usize,
    sim_threads: usize,
    dir: &Path,
    watch: Watch,
) -> Vec<f64> {
    let sim = SimProcess::spawn(
        SimSpec {
            ttft_ms: 0.0,
            itl_ms: 0.0,
            tokens: 16,
            threads: sim_threads,
            truth: false,
            rt: false,
        },
        dir,
    );
    let mut args = common(&sim.url(), 16);
    args.extend([
        s("--parallel"),
        s(parallel),
        s("--number"),
        s(number),
        s("--warmup-num"),
        s(parallel),
    ]);
    let (stats, _) = watch.run(&args, dir);
    let (_, sim_cpu_s) = sim.finish();
    check(&stats, dir);
    let sum = summary(dir);
    let sent = (number + parallel + 1) as f64;
    let req_s = sum["Req Throughput (req/s)"].as_f64().unwrap_or(f64::NAN);
    let failed = sum["Failed Requests"].as_f64().unwrap_or(f64::NAN);
    let duration_s = sum["Test Duration (s)"].as_f64().unwrap_or(f64::NAN);
    vec![
        req_s,
        stats.cpu_s * 1e6 / sent,
        stats.cpu_s / stats.wall_s * 100.0,
        sim_cpu_s * 1e6 / sent,
        sim_cpu_s / stats.wall_s * 100.0,
        stats.max_rss_bytes as f64 / 1e6,
        failed,
        duration_s,
    ]
}

pub fn ceiling_table(number: usize, sim_threads: usize) -> Table {
    Table::new(
        &format!(
            "Client ceiling: zero-delay simulator in its own process ({sim_threads} thread(s)), 16-token streams, {number} requests + warmup"
        ),
        &[
            "parallel",
            "req/s",
            "client CPU µs/req",
            "client CPU % of 1 core",
            "sim CPU µs/req",
            "sim CPU % of 1 core",
            "client peak RSS MB",
            "failed",
            "duration s",
        ],
        &[0, 1, 0, 1, 0, 1, 0, 2],
    )
}

/// Peak RSS with `streams` concurrent streams held open (TTFT 2 s, ITL 0.5 s, 8 tokens: ~5.5 s each).
pub fn memory(table: &mut Table, streams: usize, dir: &Path) {
    let sim = SimProcess::spawn(
        SimSpec {
            ttft_ms: 2000.0,
            itl_ms: 500.0,
            tokens: 8,
            threads: 2,
            truth: false,
            rt: false,
        },
        dir,
    );
    let mut args = common(&sim.url(), 8);
    args.extend([s("--parallel"), s(streams), s("--number"), s(streams)]);
    let stats = run_client(&args, dir);
    let _ = sim.finish();
    check(&stats, dir);
    let sum = summary(dir);
    let failed = sum["Failed Requests"].as_f64().unwrap_or(f64::NAN);
    let ok = sum["Success Requests"].as_f64().unwrap_or(f64::NAN);
    table.add(
        &streams.to_string(),
        vec![
            stats.max_rss_bytes as f64 / 1e6,
            peak_in_flight(&run_dir(dir).join("benchmark_data.db")) as f64,
            ok,
            failed,
            stats.cpu_s,
            stats.wall_s,
        ],
    );
}

pub fn memory_table() -> Table {
    Table::new(
        "Peak client memory with N streams held open at once (TTFT 2 s, ITL 0.5 s, 8 tokens)",
        &[
            "streams",
            "peak RSS MB",
            "peak in flight",
            "succeeded",
            "failed",
            "client CPU s",
            "wall s",
        ],
        &[1, 0, 0, 0, 2, 1],
    )
}

/// The most requests in flight at once, from the stored start and completion times.
fn peak_in_flight(db: &Path) -> usize {
    let conn = rusqlite::Connection::open(db).expect("db");
    let mut stmt = conn
        .prepare("SELECT start_time, completed_time FROM result")
        .expect("query");
    let mut events: Vec<(f64, i32)> = stmt
        .query_map([], |r| Ok((r.get::<_, f64>(0)?, r.get::<_, f64>(1)?)))
        .expect("rows")
        .flatten()
        .flat_map(|(a, b)| [(a, 1), (b, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    peak as usize
}

/// Open loop at `rate` after a warmup that opens the connections the schedule needs: send-time error
/// (actual − intended) and client CPU. With `rt_dispatch` the client's dispatcher thread (only) runs under
/// SCHED_FIFO where allowed, to show the precision when the OS does not delay it.
pub fn open_loop(table: &mut Table, rate: f64, seconds: f64, rt_dispatch: bool, dir: &Path) {
    let sim = SimProcess::spawn(
        SimSpec {
            ttft_ms: 50.0,
            itl_ms: 10.0,
            tokens: 16,
            threads: 1,
            truth: false,
            rt: false,
        },
        dir,
    );
    let number = (rate * seconds).round() as usize;
    // About as many connections as requests in flight (~0.2 s each at this rate), opened beforehand.
    let warmup = ((rate * 0.25).ceil() as usize).max(4);
    let mut args = common(&sim.url(), 16);
    args.extend([
        s("--open-loop"),
        s("--rate"),
        s(rate),
        s("--number"),
        s(number),
        s("--warmup-num"),
        s(warmup),
        s("--seed"),
        s(7),
    ]);
    let (stats, boosted) = run_client_with(&args, dir, rt_dispatch);
    let _ = sim.finish();
    check(&stats, dir);
    let rows = join::read_client_rows(&run_dir(dir).join("benchmark_data.db")).expect("rows");
    let lag = dist(rows.iter().map(|r| r.send_lag_s() * 1e6).collect());
    let label = match (rt_dispatch, boosted) {
        (false, _) => format!("{rate}"),
        (true, true) => format!("{rate}, dispatcher SCHED_FIFO"),
        (true, false) => format!("{rate}, SCHED_FIFO not allowed"),
    };
    table.add(
        &label,
        vec![
            rows.len() as f64,
            lag.mean,
            lag.p50,
            lag.p99,
            lag.max,
            stats.cpu_s / stats.wall_s * 100.0,
        ],
    );
}

pub fn open_loop_table() -> Table {
    Table::new(
        "Open-loop send-time error, actual − intended (µs; TTFT 50 ms, ITL 10 ms, 16 tokens, warmup ≈ requests in flight)",
        &[
            "rate req/s",
            "requests",
            "mean",
            "p50",
            "p99",
            "max",
            "client CPU % of 1 core",
        ],
        &[0, 1, 1, 1, 1, 1],
    )
}

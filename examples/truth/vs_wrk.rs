//! llmperf against `wrk` in one run: the same zero-delay simulator process, the same request body, the same
//! number of connections; each tool in a process of its own, run in turn (never at once), each turn
//! repeated. Prints client CPU per request and requests per second for both, and their ratios.
//!
//! wrk (Debian's `wrk` package) is the floor for a client: it writes a prebuilt request and parses only the
//! HTTP framing; llmperf also frames SSE, parses every event, times every chunk, stores every row
//! (evalscope's pickled `benchmark_data.db`) and computes exact statistics. CPU is getrusage of each process
//! (wrk: as a reaped child; llmperf: its own process, start-up and output files included).

use std::path::Path;
use std::process::{Command, Stdio};

use super::procs::{run_client, summary, SimProcess, SimSpec};
use super::stats::Table;

/// `getrusage(RUSAGE_CHILDREN)` user + system seconds: every child reaped so far.
#[allow(unsafe_code)]
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage writes into a valid, zeroed rusage owned by this frame.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The body llmperf sends with the flags of [`llmperf_args`] (as it writes it).
fn body(tokens: u32) -> String {
    format!(
        r#"{{"model": "truth", "messages": [{{"role": "user", "content": "hello world"}}], "max_tokens": {tokens}, "stream": true, "stream_options": {{"include_usage": true}}, "ignore_eos": true}}"#
    )
}

/// Runs wrk for `seconds`; returns (requests, req/s, CPU seconds), or `None` when wrk is missing.
fn run_wrk(
    url: &str,
    conns: usize,
    threads: usize,
    seconds: u64,
    tokens: u32,
    dir: &Path,
) -> Option<(f64, f64, f64)> {
    let script = dir.join("post.lua");
    let lua = format!(
        "wrk.method = \"POST\"\nwrk.body = [[{}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
        body(tokens)
    );
    std::fs::write(&script, lua).expect("write the wrk script");
    let before = children_cpu_s();
    let out = Command::new("wrk")
        .args(["-t", &threads.to_string(), "-c", &conns.to_string()])
        .args(["-d", &format!("{seconds}s"), "-s"])
        .arg(&script)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let cpu_s = children_cpu_s() - before;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "wrk failed: {text}");
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("wrk output: {text}"));
    let req_s = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("wrk output: {text}"));
    let errors = text
        .lines()
        .find(|l| l.contains("Non-2xx") || l.contains("Socket errors"));
    assert!(errors.is_none(), "wrk saw errors: {text}");
    Some((requests, req_s, cpu_s))
}

fn llmperf_args(url: &str, tokens: u32, parallel: usize, number: usize) -> Vec<String> {
    [
        "--url",
        url,
        "--model",
        "truth",
        "--prompt",
        "hello world",
        "--max-tokens",
        &tokens.to_string(),
        "--stream",
        "--extra-args",
        r#"{"ignore_eos": true}"#,
        "--sleep-interval",
        "0",
        "--parallel",
        &parallel.to_string(),
        "--number",
        &number.to_string(),
        "--warmup-num",
        &parallel.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One turn of each tool at `conns` connections; wrk runs `seconds`, llmperf about as long.
pub fn vs_wrk(table: &mut Table, conns: usize, seconds: u64, dir: &Path) -> bool {
    let tokens = 16;
    let sim = SimProcess::spawn(
        SimSpec {
            ttft_ms: 0.0,
            itl_ms: 0.0,
            tokens,
            threads: 1,
            truth: false,
            rt: false,
        },
        dir,
    );
    let cpus = llmperf::resources::available_cpus();
    let Some((wrk_n, wrk_req_s, wrk_cpu_s)) =
        run_wrk(&sim.url(), conns, cpus, seconds, tokens, dir)
    else {
        println!("wrk is not installed (Debian: apt-get install wrk); the comparison is skipped");
        return false;
    };
    let number = ((wrk_req_s * seconds as f64) as usize).max(1000);
    let stats = run_client(&llmperf_args(&sim.url(), tokens, conns, number), dir);
    let _ = sim.finish();
    assert_eq!(
        stats.exit_code,
        0,
        "llmperf failed; see {}",
        dir.join("client.log").display()
    );
    let sum = summary(dir);
    let req_s = sum["Req Throughput (req/s)"].as_f64().unwrap_or(f64::NAN);
    let sent = (number + conns + 1) as f64;
    let cpu_us = stats.cpu_s * 1e6 / sent;
    let wrk_cpu_us = wrk_cpu_s * 1e6 / wrk_n;
    table.add(
        &conns.to_string(),
        vec![
            req_s,
            cpu_us,
            wrk_req_s,
            wrk_cpu_us,
            cpu_us / wrk_cpu_us,
            req_s / wrk_req_s,
        ],
    );
    true
}

pub fn vs_wrk_table(seconds: u64) -> Table {
    Table::new(
        &format!(
            "llmperf vs wrk: zero-delay simulator in its own process (1 thread), 16-token streams, the same body; wrk {seconds} s, llmperf as many requests"
        ),
        &[
            "connections",
            "llmperf req/s",
            "llmperf CPU µs/req",
            "wrk req/s",
            "wrk CPU µs/req",
            "CPU/req ratio",
            "req/s ratio",
        ],
        &[0, 1, 0, 1, 2, 2],
    )
}

//! `--mock-jitter-cv`: the simulator's log-normal noise on TTFT and token gaps, in `--api mock` and in
//! `llmperf serve-mock`, measured from the stored rows.

use crate::common::*;

/// The spread of `xs` on the log scale, robustly: (ln p75 − ln p25) / 1.349, which is σ for a log-normal
/// sample (0.47 for CV 0.5) and stays near 0 for exact timings. Quartiles, not p10/p90: on a busy machine
/// the client may read two chunks at once (a gap near 0) or late, and such gaps stay well under a quarter.
fn log_spread(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let at = |q: f64| xs[((q * n as f64) as usize).min(n - 1)].max(1e-6).ln();
    (at(0.75) - at(0.25)) / 1.349
}

/// (median TTFT s, log spread of TTFT, log spread of every ITL) of a run's rows.
fn spread(dir: &RunDir) -> (f64, f64, f64) {
    let rows = dir.rows();
    assert!(rows.iter().all(|r| r.success));
    let mut ttft: Vec<f64> = rows.iter().map(|r| r.ttft.unwrap()).collect();
    let mut itl: Vec<f64> = rows.iter().flat_map(|r| r.itl.clone()).collect();
    let s = log_spread(&mut ttft);
    (ttft[ttft.len() / 2], s, log_spread(&mut itl))
}

const FLAGS: &str =
    "--prompt hello --max-tokens 3 --parallel 5 --number 100 --mock-ttft-ms 100 --mock-itl-ms 40";

#[test]
fn jitter_gives_the_asked_spread_around_the_same_mean() {
    let run = Run::new()
        .flags("--api mock --model m")
        .flags(FLAGS)
        .flags("--mock-jitter-cv 0.5 --seed 5");
    let (median, ttft_s, itl_s) = spread(&run.ok_dir("parallel_5_number_100"));
    // CV 0.5 is σ = 0.47 on the log scale; 100 (200) draws estimate it within ±0.2 well beyond any
    // plausible sample, and the client and the timer add a little.
    assert!((0.25..0.9).contains(&ttft_s), "TTFT log spread {ttft_s}");
    assert!((0.25..0.9).contains(&itl_s), "ITL log spread {itl_s}");
    // The factor's median is exp(−σ²/2) = 0.89: 89 ms of the 100.
    assert!((0.07..0.13).contains(&median), "median TTFT {median}");
    let plain = Run::new().flags("--api mock --model m").flags(FLAGS);
    let (_, plain_s, plain_itl_s) = spread(&plain.ok_dir("parallel_5_number_100"));
    assert!(
        plain_s < 0.15 && plain_itl_s < 0.15,
        "no jitter: log spreads {plain_s} {plain_itl_s}"
    );
}

#[test]
fn serve_mock_takes_the_same_jitter() {
    let (mut child, base) = serve_mock(&[
        "--ttft-ms",
        "100",
        "--itl-ms",
        "40",
        "--mock-jitter-cv",
        "0.5",
        "--seed",
        "9",
    ]);
    let run = Run::with_url(&format!("{base}/chat/completions"))
        .flags("--prompt hello --max-tokens 3 --parallel 5 --number 100");
    let (_, ttft_s, itl_s) = spread(&run.ok_dir("parallel_5_number_100"));
    drop(child.stdin.take());
    let _ = child.wait();
    assert!((0.25..0.9).contains(&ttft_s), "TTFT log spread {ttft_s}");
    assert!((0.25..0.9).contains(&itl_s), "ITL log spread {itl_s}");
}

#[test]
fn bad_jitter_is_a_usage_error_naming_the_flag() {
    for (flags, needle) in [
        ("--api mock --mock-jitter-cv -0.5", "--mock-jitter-cv -0.5"),
        ("--mock-jitter-cv 0.2", "add --api mock"),
    ] {
        let run = Run::new().flags("--model m --prompt p").flags(flags);
        let err = run.fails(2);
        assert!(err.contains(needle), "{flags}: {err}");
        assert_eq!(run.out_entries(), 0, "{flags}: nothing written");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llmperf"))
        .args(["serve-mock", "--mock-jitter-cv", "nan"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--mock-jitter-cv"),
        "{}",
        stderr(&out)
    );
}

//! `--burstiness` and `--ramp-up` through the CLI: the intended send times stored in `scheduled_time`
//! follow the asked shape (gamma dispersion, a linear ramp that reaches its rate).

use crate::common::*;

/// The stored intended send times, ascending.
fn scheduled(extra: &[&str], rate: &str, number: &str) -> Vec<f64> {
    let sim = fast_sim();
    let mut times: Vec<f64> = Run::against(&sim)
        .flags("--prompt a --open-loop")
        .flag("--rate", rate)
        .flag("--number", number)
        .flags("--max-tokens 1 --seed 11 --no-test-connection")
        .args(extra)
        .ok_dir(&format!("rate_{rate}.0_number_{number}"))
        .rows()
        .iter()
        .map(|r| r.scheduled_time.unwrap())
        .collect();
    times.sort_by(f64::total_cmp);
    times
}

#[test]
fn burstiness_gives_gamma_gaps_with_dispersion_one_over_k() {
    for (k, arg) in [(0.5, "0.5"), (4.0, "4")] {
        let t = scheduled(&["--burstiness", arg], "400", "800");
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64;
        let cv2 = var / (mean * mean);
        eprintln!(
            "burstiness {k}: gap dispersion {cv2:.3} (expected {:.3})",
            1.0 / k
        );
        // Gamma gaps with shape k: variance / mean² = 1 / k (2 for k = 0.5, 0.25 for k = 4).
        assert!(
            (cv2 * k - 1.0).abs() < 0.3,
            "k {k}: dispersion {cv2}, expected {}",
            1.0 / k
        );
        assert!(
            (mean - 1.0 / 400.0).abs() < 0.1 / 400.0,
            "k {k}: mean gap {mean}"
        );
    }
}

#[test]
fn ramp_up_rises_to_the_target_rate_and_holds_it() {
    // 600 requests at 200 req/s with a 1 s ramp: 100 arrive during the ramp, the rest at 200 req/s.
    let t = scheduled(&["--ramp-up", "1s"], "200", "600");
    let t0 = t[0];
    let first_half = t.iter().filter(|x| **x - t0 < 0.5).count();
    // Λ(0.5) = 200·0.25/2 = 25 arrivals (without a ramp: 100).
    assert!(
        first_half < 50,
        "{first_half} arrivals in the first half of the ramp"
    );
    let after: Vec<f64> = t.iter().copied().filter(|x| *x - t0 >= 1.2).collect();
    let rate = (after.len() - 1) as f64 / (after[after.len() - 1] - after[0]);
    eprintln!("ramp: {first_half} arrivals in the first 0.5 s, {rate:.1} req/s after the ramp");
    assert!((rate - 200.0).abs() < 20.0, "rate after the ramp {rate}");
}

#[test]
fn arrival_shapes_need_a_paced_run() {
    for (flag, args) in [
        ("--burstiness", &["--burstiness", "0.5"][..]),
        ("--ramp-up", &["--ramp-up", "10s"]),
        (
            "--burstiness",
            &["--open-loop", "--rate", "5", "--burstiness", "0"],
        ),
        ("--ramp-up", &["--ramp-up", "soon"]),
        ("--mock-reasoning-tokens", &["--mock-reasoning-tokens", "3"]),
        ("--mock-metrics-fault", &["--mock-metrics-fault", "slow"]),
        ("--server-metrics", &["--server-metrics", "not a url"]),
        (
            "--server-metrics-interval",
            &["--server-metrics-interval", "0"],
        ),
    ] {
        let run = Run::new().flags("--model m --prompt x").args(args);
        let stderr = run.fails(2);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert_eq!(run.out_entries(), 0, "{args:?}: no output folder");
    }
}

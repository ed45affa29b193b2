//! Workload throughput files and tables, and `--enable-progress-tracker`, through the CLI.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn workload_files_match_the_stored_rows_and_appear_in_console_and_summary() {
    let sim = fast_sim();
    let cmd = Run::against(&sim)
        .flags(r#"--prompt 'a b c d' --parallel 2 --number 10 --max-tokens 5 --extra-args '{"ignore_eos": true}'"#);
    let stdout = cmd.ok();
    let root = cmd.root();
    let run = cmd.run_dir("parallel_2_number_10");
    let rows = run.rows();
    let ok_rows: Vec<&Row> = rows.iter().filter(|r| r.success).collect();
    assert_eq!(ok_rows.len(), 10);

    // workload_timeline.json: one point per success, in stored (completion) order, from the first start.
    let timeline = json_file(&run.join("workload_timeline.json"));
    let keys: Vec<&String> = timeline.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["wall_start", "points"]);
    let wall_start = timeline["wall_start"].as_f64().unwrap();
    assert_eq!(wall_start, ok_rows[0].start_time);
    let points = timeline["points"].as_array().unwrap();
    assert_eq!(points.len(), 10);
    let mut cum = 0;
    for (p, r) in points.iter().zip(&ok_rows) {
        cum += r.completion_tokens.unwrap();
        let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["t", "cum_completion", "cum_new_prompt", "cum_cached_prompt"]
        );
        assert!((p["t"].as_f64().unwrap() - (r.completed_time - wall_start)).abs() < 1e-6);
        assert_eq!(p["cum_completion"].as_i64().unwrap(), cum);
    }
    assert_eq!(cum, 50);

    // workload_throughput.json: overall = cumulative tokens / last t.
    let w = json_file(&run.join("workload_throughput.json"));
    let keys: Vec<&String> = w.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "n_samples",
            "wall_time_s",
            "last_window_s",
            "warmup_frac",
            "rows"
        ]
    );
    assert_eq!(w["n_samples"], 10);
    assert_eq!(
        (w["last_window_s"].as_f64(), w["warmup_frac"].as_f64()),
        (Some(30.0), Some(0.2))
    );
    let last_t = ok_rows.last().unwrap().completed_time - wall_start;
    assert_eq!(w["wall_time_s"].as_f64().unwrap(), py_round(last_t, 4));
    let completion = &w["rows"][3];
    assert_eq!(completion["metric"], "Completion tok/s");
    let overall = completion["overall"].as_f64().unwrap();
    assert!(
        (overall - 50.0 / last_t).abs() / overall < 1e-6,
        "{overall}"
    );
    assert_eq!(
        completion["last_window"], completion["overall"],
        "a run under 30 s"
    );

    // The console table (log) and the Workload Throughput section of performance_summary.txt.
    let log = std::fs::read_to_string(root.join("benchmark.log")).unwrap();
    assert!(
        log.contains("Workload throughput (10 samples):\n┌─────"),
        "{log}"
    );
    let summary = std::fs::read_to_string(root.join("performance_summary.txt")).unwrap();
    let section = summary
        .split("Workload Throughput")
        .nth(1)
        .expect("Workload Throughput section");
    assert!(
        section.contains("│    2 │    - │ Total Prompt tok/s  │"),
        "{section}"
    );
    assert!(
        section.contains("│      │      │ Completion tok/s    │"),
        "{section}"
    );
    assert!(stdout.contains("Workload Throughput"));
}

#[test]
fn an_all_failed_run_writes_no_workload_files() {
    let run = Run::with_url("http://127.0.0.1:9/v1")
        .flags("--prompt x --number 2 --no-test-connection --connect-timeout 1");
    run.no_success();
    let run = run.run_dir("parallel_1_number_2");
    assert!(run.join("benchmark_summary.json").is_file());
    assert!(!run.join("workload_throughput.json").exists());
    assert!(!run.join("workload_timeline.json").exists());
    let summary =
        std::fs::read_to_string(run.parent().unwrap().join("performance_summary.txt")).unwrap();
    assert!(!summary.contains("Workload Throughput"), "{summary}");
}

#[test]
fn progress_tracker_is_updated_during_the_sweep_and_completed_at_the_end() {
    // Slow enough that the file is seen mid-run: 2 runs of 30 requests, ~40 ms each, one at a time.
    let sim = timed_sim(20, 5);
    let run = Run::against(&sim).flags(
        "--prompt x --parallel 1 2 --number 30 40 --max-tokens 4 --no-timestamp --enable-progress-tracker",
    );
    let mut child = run
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let path = run.out().join("m/progress.json");
    let t0 = Instant::now();
    let mut seen_running = None;
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(60), "run takes too long");
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                if v["status"] == "running" && seen_running.is_none() {
                    seen_running = Some(v);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(child.wait().unwrap().success());
    let running = seen_running.expect("progress.json seen while running");
    assert_eq!(running["pipeline"], "perf");
    assert_eq!(running["total_count"], 70);
    assert!(running["processed_count"].as_u64().unwrap() < 70);

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\n  \"status\": \"completed\",\n  \"pipeline\": \"perf\",\n"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total_count"], 70);
    assert_eq!(v["processed_count"], 70);
    assert_eq!(v["percent"], 100.0);
    assert_eq!(v["runs_total"], 2);
    assert_eq!(v["runs_done"], 2);
    assert_eq!(v["current_run"], "parallel_2_number_40");
    assert_eq!(v["interrupted"], false);
    let args = json_file(&run.out().join("m/parallel_1_number_30/benchmark_args.json"));
    assert_eq!(args["enable_progress_tracker"], true);
}

#[test]
fn progress_tracker_reports_a_failed_sweep_as_an_error() {
    // Nothing listens on port 9, and the connection test gives up after --total-timeout.
    let run = Run::with_url("http://127.0.0.1:9/v1")
        .flags("--prompt x --number 3 --total-timeout 1 --no-timestamp --enable-progress-tracker");
    run.fails(1);
    let v = json_file(&run.out().join("m/progress.json"));
    assert_eq!(v["status"], "error");
    assert_eq!(v["processed_count"], 0);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("connection"),
        "{v}"
    );
}

//! Workload throughput: the golden workload throughput and timeline files of real
//! evalscope 1.14.1 runs are reproduced byte for byte from the same runs' database rows, and the
//! window rules are checked on hand-made timelines.

use std::path::Path;

use crate::metrics::workload::{WorkloadTimeline, WORKLOAD_METRICS};

use crate::test_support::golden_root;

/// Feeds the stored rows, in insertion (= completion) order, as evalscope's consumer fed them.
fn replay(run: &Path) -> WorkloadTimeline {
    replay_spilling(run, crate::metrics::workload::POINTS_IN_MEMORY)
}

/// [`replay`] holding at most `cap` points in memory (the rest spilled to disk and read back).
fn replay_spilling(run: &Path, cap: usize) -> WorkloadTimeline {
    let con = super::golden_db(run);
    let mut stmt = con
        .prepare(
            "SELECT start_time, completed_time, prompt_tokens, completion_tokens FROM result \
             WHERE success = 1 ORDER BY rowid",
        )
        .expect("query");
    let mut timeline = WorkloadTimeline::with_spill(None, cap);
    let mut rows = stmt.query([]).expect("rows");
    while let Some(row) = rows.next().expect("row") {
        let tokens = |i: usize| row.get::<_, Option<i64>>(i).expect("tokens").unwrap_or(0) as u64;
        timeline.feed(
            row.get(0).expect("start_time"),
            row.get(1).expect("completed_time"),
            tokens(2),
            tokens(3),
            0,
        );
    }
    timeline
}

#[test]
fn golden_workload_files_are_reproduced_from_the_golden_rows() {
    let mut runs = Vec::new();
    super::run_dirs_holding(&golden_root(), "workload_throughput.json", &mut runs);
    assert!(
        runs.len() >= 8,
        "expected the golden runs with rows: {runs:?}"
    );
    for run in runs {
        let timeline = replay(&run);
        let throughput = timeline.throughput().expect("successful rows");
        let golden = |f: &str| std::fs::read_to_string(run.join(f)).expect("golden file");
        assert_eq!(
            throughput.to_json_string(),
            golden("workload_throughput.json"),
            "{}",
            run.display()
        );
        assert_eq!(
            timeline.to_json_string(),
            golden("workload_timeline.json"),
            "{}",
            run.display()
        );
        // Points spilled to disk in blocks of 3 and read back give the same files.
        let spilled = replay_spilling(&run, 3);
        assert!(spilled.spilled_bytes() > 0 || spilled.n_points() < 3);
        let same = spilled.throughput().expect("successful rows");
        assert_eq!(same.to_json_string(), throughput.to_json_string());
        let path = tempfile::tempdir().unwrap();
        let file = path.path().join("workload_timeline.json");
        spilled.write_json_file(&file).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            golden("workload_timeline.json"),
            "{} (spilled)",
            run.display()
        );
    }
}

fn rates(t: &WorkloadTimeline, metric: &str) -> (f64, f64, f64) {
    let w = t.throughput().expect("points");
    let row = w.rows.iter().find(|r| r.metric == metric).expect("row");
    (row.overall, row.last_window, row.steady_state)
}

#[test]
fn windows_follow_evalscope_on_a_long_run() {
    // One request completes every 10 s, 100 completion + 50 prompt (20 of them cached) tokens each.
    let mut t = WorkloadTimeline::default();
    for i in 1..=10u64 {
        t.feed(100.0, 100.0 + 10.0 * i as f64, 50, 100, 20);
    }
    let w = t.throughput().unwrap();
    assert_eq!(w.n_samples, 10);
    assert_eq!(w.wall_time_s, 100.0);
    let names: Vec<&str> = w.rows.iter().map(|r| r.metric).collect();
    assert_eq!(names, WORKLOAD_METRICS);
    // Overall: 1000 tokens over 100 s.
    // Last 30s: anchor = latest point with t <= 70 (t = 70, 7 done) → 300 tokens over 30 s.
    // Steady: anchor = latest point with t <= 20 (t = 20, 2 done) → 800 tokens over 80 s.
    assert_eq!(rates(&t, "Completion tok/s"), (10.0, 10.0, 10.0));
    assert_eq!(rates(&t, "Total Prompt tok/s"), (5.0, 5.0, 5.0));
    assert_eq!(rates(&t, "New Prompt tok/s"), (3.0, 3.0, 3.0));
    assert_eq!(rates(&t, "Cached Prompt tok/s"), (2.0, 2.0, 2.0));

    // Skewed: the last 3 requests carry 10× the tokens, so the windows differ.
    let mut t = WorkloadTimeline::default();
    for i in 1..=10u64 {
        let tokens = if i > 7 { 1000 } else { 100 };
        t.feed(100.0, 100.0 + 10.0 * i as f64, 0, tokens, 0);
    }
    let (overall, last, steady) = rates(&t, "Completion tok/s");
    assert_eq!(overall, 3700.0 / 100.0);
    assert_eq!(last, 3000.0 / 30.0);
    assert_eq!(steady, 3500.0 / 80.0);
}

#[test]
fn short_runs_fall_back_to_overall() {
    // Wall ≤ 30 s: the tail window is the whole run.
    let mut t = WorkloadTimeline::default();
    t.feed(1.0, 3.0, 10, 4, 0);
    t.feed(1.5, 5.0, 10, 4, 0);
    let (overall, last, steady) = rates(&t, "Completion tok/s");
    assert_eq!(overall, 8.0 / 4.0);
    assert_eq!(last, overall);
    // Steady anchor: latest point with t <= 0.8 → the first point (t = 2) → 4 tokens over 2 s.
    assert_eq!(steady, 4.0 / 2.0);

    // A single point: the steady anchor is the last point, so steady falls back to overall.
    let mut t = WorkloadTimeline::default();
    t.feed(1.0, 3.0, 10, 4, 0);
    let (overall, last, steady) = rates(&t, "Completion tok/s");
    assert_eq!((overall, last, steady), (2.0, 2.0, 2.0));
}

#[test]
fn cached_beyond_prompt_is_clamped_and_bad_stamps_are_skipped() {
    let mut t = WorkloadTimeline::default();
    t.feed(5.0, 4.0, 10, 10, 0); // completed before start: skipped
    t.feed(5.0, 0.0, 10, 10, 0); // never completed: skipped
    assert!(t.throughput().is_none(), "no points, no file");
    t.feed(1.0, 2.0, 5, 1, 8);
    let text = t.to_json_string();
    assert!(text.contains("\"cum_new_prompt\": 0,"), "{text}");
    assert!(text.contains("\"cum_cached_prompt\": 8"), "{text}");
    assert!(text.starts_with("{\n    \"wall_start\": 1.0,"), "{text}");
}

#[test]
fn zero_width_windows_give_zero_rates() {
    // Completion at the very start: t = 0, so every window has no width.
    let mut t = WorkloadTimeline::default();
    t.feed(2.0, 2.0, 3, 3, 0);
    assert_eq!(rates(&t, "Completion tok/s"), (0.0, 0.0, 0.0));
    assert!(t
        .throughput()
        .unwrap()
        .to_json_string()
        .contains("\"overall\": 0.0"));
}

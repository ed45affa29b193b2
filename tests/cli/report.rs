//! `perf_report.html` in a real browser: a sweep against the simulator (with failing requests), then
//! headless Chromium renders the report with every host name unresolvable, takes a screenshot, and the
//! test fails on any console message, any fetched resource, or any chart that is missing or drew nothing.
//!
//! Chromium comes from `.ci/install-chromium.sh` (Debian `chromium`). Without it the test fails when `CI` is
//! set and prints a skip note otherwise. `LLMPERF_CHROMIUM` names another binary; `LLMPERF_SAVE_SCREENSHOT`
//! copies the screenshot to that path (how `docs/report.png` is made).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LLMPERF_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// Chromium, or `None` (with a note) when it is missing outside CI.
fn chromium() -> Option<PathBuf> {
    match find_chromium() {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("chromium not found and CI is set: run .ci/install-chromium.sh (Debian package `chromium`)")
        }
        None => {
            eprintln!(
                "SKIPPED browser test: no chromium on PATH. Install it (sudo .ci/install-chromium.sh) to run it."
            );
            None
        }
    }
}

/// Runs headless Chromium with `args` and `url`; returns (stdout, the console lines of stderr).
fn headless(chromium: &Path, profile: &Path, args: &[&str], url: &str) -> (String, Vec<String>) {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            // No network: every host name fails to resolve.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// A page that loads `report` in a frame and writes what it finds as JSON into `<pre id="out">`.
const PROBE: &str = r#"<!DOCTYPE html><html><body><pre id="out">pending</pre>
<iframe id="f" src="REPORT" style="width:1280px;height:2000px"></iframe>
<script>
document.getElementById('f').addEventListener('load', () => {
  const out = document.getElementById('out');
  try {
    const w = document.getElementById('f').contentWindow;
    const doc = w.document;
    const charts = Array.from(doc.querySelectorAll('svg.chart')).map(svg => {
      const marks = svg.querySelector('g.marks');
      const box = marks ? marks.getBBox() : {width: 0, height: 0};
      const rect = svg.getBoundingClientRect();
      return {id: svg.dataset.chart, empty: svg.hasAttribute('data-empty'),
              marks: marks ? marks.childElementCount : 0,
              area: box.width * box.height, width: rect.width, height: rect.height};
    });
    const resources = w.performance.getEntriesByType('resource').map(e => e.name);
    const regions = Array.from(doc.querySelectorAll('.table-wrap')).map(d => d.tabIndex);
    const banners = Array.from(doc.querySelectorAll('p.load-banner')).map(b => b.textContent);
    const bands = Array.from(doc.querySelectorAll('svg.chart rect.plateau')).map(r => {
      const box = r.getBoundingClientRect();
      return {chart: r.closest('svg').dataset.chart, width: box.width, height: box.height,
              fill: w.getComputedStyle(r).fill};
    });
    out.textContent = JSON.stringify({charts, resources, regions, banners, bands,
      tables: doc.querySelectorAll('table').length, title: doc.title});
  } catch (e) { out.textContent = 'ERROR ' + e; }
});
</script></body></html>"#;

fn probe(chromium: &Path, dir: &Path, report: &Path) -> (Value, Vec<String>) {
    let page = dir.join("probe.html");
    let url = format!("file://{}", report.display());
    std::fs::write(&page, PROBE.replace("REPORT", &url)).unwrap();
    let (dom, console) = headless(
        chromium,
        &dir.join("profile-probe"),
        &[
            "--allow-file-access-from-files",
            "--window-size=1280,2000",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ],
        &format!("file://{}", page.display()),
    );
    let start = dom.find(r#"<pre id="out">"#).expect("probe output") + 14;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("probe said {text:?}: {e}"));
    (v, console)
}

/// A line_by_line dataset where one line in four asks for no usage, so that request fails.
fn dataset(dir: &Path) -> PathBuf {
    let path = dir.join("prompts.txt");
    let bad = r#"{"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": false}}"#;
    std::fs::write(&path, format!("one two\nthree four five\nsix\n{bad}\n")).unwrap();
    path
}

#[test]
fn the_html_report_renders_offline_with_every_chart_and_no_console_error() {
    let sim = fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let run = Run::against(&sim)
        .flags("--dataset line_by_line")
        .flag("--dataset-path", &data)
        .flags("--parallel 1 3 --number 12 24 --max-tokens 6");
    run.ok();
    let root = run.root();
    let report = root.join("perf_report.html");
    let html = std::fs::read_to_string(&report).expect("perf_report.html at the run root");
    for run in ["parallel_1_number_12", "parallel_3_number_24"] {
        assert!(html.contains(run), "{run}");
    }
    assert!(html.contains("bad_response"), "failures by kind");
    assert!(!html.contains("<script"), "no script in the report");

    let Some(chromium) = chromium() else {
        return;
    };
    // The console detector works: a page that logs must be caught.
    let noisy = dir.path().join("noisy.html");
    std::fs::write(&noisy, "<script>console.error('detector-check')</script>").unwrap();
    let (_, console) = headless(
        &chromium,
        &dir.path().join("profile-noisy"),
        &["--dump-dom"],
        &format!("file://{}", noisy.display()),
    );
    assert!(
        console.iter().any(|l| l.contains("detector-check")),
        "{console:?}"
    );

    let (v, console) = probe(&chromium, dir.path(), &report);
    assert!(console.is_empty(), "console messages: {console:?}");
    assert_eq!(
        v["resources"],
        Value::Array(vec![]),
        "the report fetched something"
    );
    assert_eq!(v["title"], "llmperf report: m");
    assert!(v["tables"].as_u64().unwrap() >= 5);
    assert!(
        v["regions"].as_array().unwrap().iter().all(|t| t == 0),
        "focusable table regions"
    );
    let charts = v["charts"].as_array().unwrap();
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
    let mut want = vec![
        "throughput-rps",
        "throughput-tok",
        "latency-ttft",
        "latency-itl",
        "latency-tpot",
        "latency-latency",
    ];
    let per_run = ["ttft-hist", "itl-hist", "timeline", "tok-rate"];
    let run_charts: Vec<String> = (0..2)
        .flat_map(|i| per_run.iter().map(move |k| format!("{k}-{i}")))
        .collect();
    want.extend(run_charts.iter().map(String::as_str));
    for id in &want {
        assert!(ids.contains(id), "chart {id} missing: {ids:?}");
    }
    for c in charts {
        assert_eq!(c["empty"], false, "{c}");
        assert!(c["marks"].as_u64().unwrap() > 0, "{c}");
        assert!(c["area"].as_f64().unwrap() > 100.0, "drawn: {c}");
        assert!(c["width"].as_f64().unwrap() > 200.0, "laid out: {c}");
    }

    let shot = dir.path().join("report.png");
    headless(
        &chromium,
        &dir.path().join("profile-shot"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2200",
        ],
        &format!("file://{}", report.display()),
    );
    let png = std::fs::read(&shot).expect("screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // A blank page compresses to a few KB; charts and tables do not.
    assert!(
        png.len() > 40_000,
        "screenshot looks blank: {} bytes",
        png.len()
    );
    if let Some(dest) = std::env::var_os("LLMPERF_SAVE_SCREENSHOT") {
        std::fs::copy(&shot, dest).unwrap();
    }
}

/// The labels of chart `id` (`<svg … data-chart="{id}"`) in `html` anchored at `anchor`: `middle` for its
/// x ticks (and its axis titles), `end` for its y ticks.
fn chart_labels(html: &str, id: &str, anchor: &str) -> Vec<String> {
    let svg = &html[html
        .find(&format!(r#"data-chart="{id}""#))
        .unwrap_or_else(|| panic!("chart {id}"))..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    svg.split(&format!(r#"text-anchor="{anchor}">"#))
        .skip(1)
        .map(|t| t[..t.find('<').unwrap()].to_string())
        .collect()
}

#[test]
fn a_run_of_milliseconds_gets_distinct_ticks() {
    // Sub-millisecond requests: the time axes span a few milliseconds and the latency axis a fraction of
    // one, where 3-decimal labels used to repeat (`0, 0.001, 0.001, 0.001`).
    let run = Run::new().flags(
        "--api mock --model m --prompt x --parallel 1 2 --number 3 4 --max-tokens 1 --mock-ttft-ms 0 --mock-itl-ms 0",
    );
    run.ok();
    let html = std::fs::read_to_string(run.root().join("perf_report.html")).unwrap();
    for (chart, anchor) in [
        ("timeline-0", "middle"),
        ("tok-rate-0", "middle"),
        ("latency-latency", "end"),
        ("latency-ttft", "end"),
    ] {
        let labels = chart_labels(&html, chart, anchor);
        assert!(labels.len() >= 2, "{chart}: {labels:?}");
        let mut distinct = labels.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), labels.len(), "{chart}: {labels:?}");
    }
}

/// A run whose load was not as configured (the client-work test hook holds its open loop back): the
/// rendered page shows one banner naming the run and its reason, and its charts shade the plateau window.
#[test]
fn the_html_report_shows_the_load_banner_and_the_plateau_band_in_a_browser() {
    let sim = fast_sim();
    let dir = tempfile::tempdir().unwrap();
    let run = Run::against(&sim)
        .flags("--prompt a --open-loop --rate 500 --number 40 --max-tokens 1 --no-test-connection")
        .env("LLMPERF_INJECT_CLIENT_WORK_US", "20000");
    let s = run.ok_dir("rate_500.0_number_40").summary();
    assert_eq!(s["Load As Configured"], false, "{s}");
    let Some(chromium) = chromium() else {
        return;
    };
    let (v, console) = probe(&chromium, dir.path(), &run.root().join("perf_report.html"));
    assert!(console.is_empty(), "console messages: {console:?}");
    let banners = v["banners"].as_array().unwrap();
    assert_eq!(banners.len(), 1, "{v}");
    let banner = banners[0].as_str().unwrap();
    assert!(banner.contains("rate_500.0_number_40"), "{banner}");
    assert!(
        banner.contains(s["Load Verdict Reason"].as_str().unwrap()),
        "{banner}"
    );
    let bands = v["bands"].as_array().unwrap();
    for chart in ["timeline-0", "tok-rate-0"] {
        let band = bands
            .iter()
            .find(|b| b["chart"] == chart)
            .unwrap_or_else(|| panic!("no band on {chart}: {v}"));
        assert!(band["width"].as_f64().unwrap() > 1.0, "{band}");
        assert!(band["height"].as_f64().unwrap() > 1.0, "{band}");
        assert_ne!(band["fill"], "none", "{band}");
    }
}

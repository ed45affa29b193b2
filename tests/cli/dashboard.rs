//! `--ui dashboard` in a real terminal: llmperf runs inside a detached tmux session of a fixed size, the
//! test reads the pane as a person would see it (mid-run, after a resize, at the end) and types Ctrl-C.
//! Needs Debian's `tmux` (scripts/setup_test_deps.sh); skipped with a note without it, except under
//! `CI=true`, where it fails.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
    dir: tempfile::TempDir,
}

impl Tmux {
    /// A server running `cmd` in a `cols`×`rows` session, or `None` (with a note) without tmux.
    fn start(cmd: &Command, cols: u16, rows: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and tmux is missing: run scripts/setup_test_deps.sh"
            );
            eprintln!("note: skipping the dashboard test: no tmux here (scripts/setup_test_deps.sh installs it)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let socket = format!("llmperf-test-{}-{}", std::process::id(), cols);
        // The command's exit code goes to a file; the pane then stays open to be read.
        let code = dir.path().join("code");
        let line = format!(
            "{}; echo $? > {}; sleep 600",
            shell_line(cmd),
            quote(code.as_os_str())
        );
        let t = Tmux { socket, dir };
        let status = t
            .tmux()
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "t"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg(line)
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session");
        Some(t)
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    /// The pane as shown now.
    fn capture(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Everything the pane has shown on its main screen, the scrolled-off lines included.
    fn history(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-S", "-", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (up to `limit`) until the pane shows every one of `needles`; returns the pane.
    fn wait_for(&self, needles: &[&str], limit: Duration) -> String {
        let t0 = Instant::now();
        loop {
            let pane = self.capture();
            if needles.iter().all(|n| pane.contains(n)) {
                return pane;
            }
            assert!(
                t0.elapsed() < limit,
                "the pane never showed {needles:?}; it shows:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &str) {
        assert!(self
            .tmux()
            .args(["send-keys", "-t", "t", keys])
            .status()
            .unwrap()
            .success());
    }

    fn resize(&self, cols: u16, rows: u16) {
        assert!(self
            .tmux()
            .args(["resize-window", "-t", "t"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .status()
            .unwrap()
            .success());
    }

    /// The command's exit code, once it has ended (up to `limit`).
    fn exit_code(&self, limit: Duration) -> i32 {
        let path: PathBuf = self.dir.path().join("code");
        let t0 = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if text.ends_with('\n') {
                    return text.trim().parse().unwrap();
                }
            }
            assert!(
                t0.elapsed() < limit,
                "llmperf did not end; the pane shows:\n{}",
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

fn quote(s: &OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"))
}

/// `cmd` as one shell command line, its environment first.
fn shell_line(cmd: &Command) -> String {
    let mut parts: Vec<String> = vec!["env".into()];
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            let pair = format!("{}={}", k.to_string_lossy(), v.to_string_lossy());
            parts.push(quote(OsStr::new(&pair)));
        }
    }
    parts.push(quote(cmd.get_program()));
    parts.extend(cmd.get_args().map(quote));
    parts.join(" ")
}

/// Where the dashboard's top border ends (its `┐`), in columns from the left; 0 when not drawn.
fn top_border_width(pane: &str) -> usize {
    pane.lines()
        .next()
        .filter(|l| l.starts_with('┌') && l.ends_with('┐'))
        .map_or(0, |l| l.chars().count())
}

#[test]
fn the_dashboard_shows_a_run_live_and_ctrl_c_stops_it_as_sigint() {
    let run = Run::new().flags(
        "--api mock --model demo --prompt hello --number 100000 --parallel 4 --max-tokens 8 \
         --mock-ttft-ms 20 --mock-itl-ms 5 --ui dashboard --no-timestamp --mock-fault http-503:50",
    );
    let Some(tmux) = Tmux::start(&run.command(), 100, 30) else {
        return;
    };
    // Mid-run: the aim, requests in flight, progress, latency percentiles, failures by kind.
    let pane = tmux.wait_for(
        &[
            "run 1 of 1 · parallel_4_number_100000",
            "closed loop, 4 in flight",
            "In flight",
            "TTFT",
            "http_status",
        ],
        Duration::from_secs(60),
    );
    assert!(pane.contains("Ctrl-C"), "{pane}");
    assert!(
        pane.contains("latest: http_status"),
        "the latest error text:\n{pane}"
    );
    let done = |pane: &str| -> u64 {
        let at = pane.find(" done (").expect("progress shown");
        let head = &pane[..at];
        let start = head.rfind('/').expect("done/total");
        let digits = &head[..start];
        let from = digits
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        digits[from..].parse().unwrap()
    };
    assert_eq!(
        top_border_width(&pane),
        100,
        "drawn to the terminal's width:\n{pane}"
    );
    let first = done(&pane);
    std::thread::sleep(Duration::from_millis(1500));
    let later = done(&tmux.capture());
    assert!(later > first, "the counts move: {first} then {later}");
    // A smaller terminal: the dashboard redraws to fit it.
    tmux.resize(80, 24);
    let t0 = Instant::now();
    let pane = loop {
        let pane = tmux.wait_for(&["Latency", "In flight", "TTFT"], Duration::from_secs(10));
        if top_border_width(&pane) == 80 {
            break pane;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not redrawn at 80 columns:\n{pane}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(pane.lines().count() <= 24, "{pane}");
    // Ctrl-C typed into the dashboard: exactly what SIGINT does today.
    tmux.keys("C-c");
    assert_eq!(tmux.exit_code(Duration::from_secs(60)), 130);
    let end = tmux.capture();
    assert!(
        !end.contains("stops the run (results kept)"),
        "the terminal is restored:\n{end}"
    );
    let all = tmux.history();
    assert!(
        all.contains("Performance Test Summary Report"),
        "the report is printed:\n{all}"
    );
    assert!(
        all.contains("Interrupted: no new requests are sent"),
        "the warnings logged meanwhile are shown:\n{all}"
    );
    let dir = run.run_dir("parallel_4_number_100000");
    let rows = dir.rows();
    let s = dir.summary();
    assert_eq!(s["Interrupted"], true);
    assert_eq!(s["Total Requests"].as_u64().unwrap() as usize, rows.len());
    assert!(
        rows.len() as u64 >= later,
        "every request counted is stored"
    );
}

#[test]
fn the_dashboard_closes_by_itself_when_the_run_ends() {
    let run = Run::new().flags(
        "--api mock --model demo --prompt hello --parallel 2 4 --number 200 400 --max-tokens 8 \
         --mock-ttft-ms 10 --mock-itl-ms 5 --ui dashboard --no-timestamp",
    );
    let Some(tmux) = Tmux::start(&run.command(), 120, 40) else {
        return;
    };
    let pane = tmux.wait_for(
        &["llmperf · demo · demo", "parallel_"],
        Duration::from_secs(60),
    );
    assert!(
        pane.contains("run 1 of 2") || pane.contains("run 2 of 2"),
        "{pane}"
    );
    assert_eq!(tmux.exit_code(Duration::from_secs(120)), 0);
    let end = tmux.capture();
    assert!(
        !end.contains("stops the run (results kept)"),
        "the terminal is restored:\n{end}"
    );
    let all = tmux.history();
    assert!(all.contains("Performance Test Summary Report"), "{all}");
    for (name, n) in [
        ("parallel_2_number_200", 200),
        ("parallel_4_number_400", 400),
    ] {
        let dir = run.run_dir(name);
        assert_eq!(dir.rows().len(), n);
        assert!(
            dir.summary().get("Interrupted").is_none(),
            "{name} is complete"
        );
    }
}

#[test]
fn the_dashboard_needs_a_terminal() {
    // The test's stderr is a pipe: a usage error before anything is written.
    let run = Run::new().flags("--api mock --model demo --prompt hi --number 2 --ui dashboard");
    let err = run.fails(2);
    assert!(err.contains("--ui dashboard needs a terminal"), "{err}");
    assert_eq!(run.out_entries(), 0);
}

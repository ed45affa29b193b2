//! Drop-in for real: every `evalscope perf` command of evalscope's documentation (the stress-test,
//! best-practice, FAQ and speed-benchmark pages, en and zh) and every recipe of llmperf's README and
//! `examples/*.sh` runs through the llmperf binary, each from its own empty folder, and must exit 0 and write
//! the run folders it asks for, each with `Total Requests` as asked and no failed request. The commands and
//! their expected run folders are `tests/fixtures/documented_commands.txt`.
//!
//! A command runs as documented, byte for byte, but for these rewrites (and the scale-downs its entry
//! records: `--number`, `--duration`, `--rate`, `--sla-upper-bound`, a script's `NUMBER`/`NUMBERS`):
//!
//! * the program: `evalscope perf`, `llmperf`, `cargo run --release --` → the llmperf binary;
//!   `examples/X.sh` → this repository's script, with `LLMPERF` set to the binary;
//! * the URL (`--url`, a script's `URL=`): scheme, host and port → the simulator on 127.0.0.1 (an in-process
//!   `SimServer`, no delays); the path is kept (`/v1/completions`, DashScope's `/compatible-mode/v1/…`);
//! * placeholders: `OPENAI_API_COMPAT_URL` → the simulator's `/v1/chat/completions`; `YOUR_MODEL` → a local
//!   model folder (the shared Qwen3 tokenizer); the API keys (`$DASHSCOPE_API_KEY`, `API_KEY`,
//!   `YOUR_MODELSCOPE_SDK_TOKEN`, `YOUR_WANDB_API_KEY`) → test keys; `/path/to/tokenizer` → the shared
//!   Qwen3 tokenizer; any other `/path/to/X` → a file X written beside the command (files named by a
//!   relative path, `prompt.txt`, `trace.jsonl`, `long_text.txt`, are written in the folder it runs in);
//! * the hubs: `MODELSCOPE_ENDPOINT` → a fake ModelScope hub serving the data sets and tokenizer ids the
//!   commands read (`world::TOKENIZERS`: each id backed by a real tokenizer of the shared folder), with empty
//!   caches per command;
//! * `--api local` / `local_vllm`: `LLMPERF_PYTHON`/`PYTHONPATH` find a stand-in `vllm` that serves with
//!   `llmperf serve-mock` on evalscope's port (8877), so the server is really started, waited for and
//!   stopped; `--wandb-api-key`: a stand-in `wandb` package.
//!
//! Not run (the fixture's `skip` lines, listed when the test runs): the fragments that are not a command
//! (`evalscope perf ... --dataset X`: multi_turn.md's trie line, the FAQ's kontext_bench and openqa lines), and
//! multi_turn.md's `swe_smith` live construction (no `--dataset-path`), which `tests/cli/swe_smith_live.rs`
//! runs as documented against a fake hub serving SWE-smith-trajectories, checking every conversation.

mod fixture;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use llmperf::sim::{SimConfig, SimServer};

use crate::common::fake_hub::FakeHub;
use crate::common::{files_under, json_file};
use fixture::{Entry, Expect, Scale, SCALABLE, SCALABLE_SETTINGS};

/// `--api local` / `local_vllm` serve on evalscope's default `--port` 8877: one such command at a time.
static LOCAL_PORT: Mutex<()> = Mutex::new(());

/// Commands run at once (most of a command's time is evalscope's 5 s `--sleep-interval` between runs).
const WORKERS: usize = 12;

/// Longest a command may take: a guard against a hang, not a speed check. The longest command
/// (`examples/evalscope_examples.sh all`: eight runs, each with evalscope's 5 s `--sleep-interval`) takes
/// about a minute on an idle machine and well over 100 s beside other builds on 2 cores.
const TIMEOUT: Duration = Duration::from_secs(360);

/// The test keys the API-key placeholders stand for.
const DASHSCOPE_KEY: &str = "sk-dashscope-test";
const KEYS: [(&str, &str); 3] = [
    ("API_KEY", "sk-api-key-test"),
    ("YOUR_MODELSCOPE_SDK_TOKEN", "ms-sdk-token-test"),
    ("YOUR_WANDB_API_KEY", "wandb-key-test"),
];

/// How a documented command is run.
struct Invocation {
    /// `NAME=VALUE` before the program, and the script settings a scale-down sets.
    env: Vec<(String, String)>,
    /// A recipe script (run with bash), else the llmperf binary.
    script: Option<PathBuf>,
    args: Vec<String>,
}

impl Invocation {
    fn flag(&self, name: &str) -> Option<&str> {
        let i = self.args.iter().rposition(|a| a == name)?;
        self.args.get(i + 1).map(String::as_str)
    }

    fn local(&self) -> bool {
        matches!(self.flag("--api"), Some("local" | "local_vllm"))
    }

    /// Where the results go, relative to the folder the command runs in.
    fn outputs_dir(&self) -> String {
        let from_env = self.env.iter().find(|(k, _)| k == "OUTPUTS_DIR");
        match (self.flag("--outputs-dir"), from_env) {
            (Some(dir), _) => dir.to_string(),
            (None, Some((_, dir))) => dir.clone(),
            (None, None) => "outputs".to_string(),
        }
    }
}

/// `scheme://host[:port]` of `url` replaced by `base`, the path kept.
fn to_simulator(url: &str, base: &str) -> String {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or_else(|| panic!("not a URL: {url}"));
    match rest.find('/') {
        Some(i) => format!("{base}{}", &rest[i..]),
        None => base.to_string(),
    }
}

/// The command's words after the rewrites and scale-downs (see the module docs).
fn prepare(entry: &Entry, sim: &str, cwd: &Path) -> Result<Invocation, String> {
    let vars = BTreeMap::from([("DASHSCOPE_API_KEY", DASHSCOPE_KEY.to_string())]);
    let mut words = fixture::words(&entry.command, &vars);
    let mut env = Vec::new();
    while let Some((k, v)) = words[0]
        .split_once('=')
        .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
    {
        let v = if k == "URL" {
            to_simulator(v, sim)
        } else {
            v.to_string()
        };
        env.push((k.to_string(), v));
        words.remove(0);
    }
    let program: Vec<&str> = words.iter().map(String::as_str).take(4).collect();
    let (skip, script) = match program.as_slice() {
        ["evalscope", "perf", ..] => (2, None),
        ["llmperf", ..] => (1, None),
        ["cargo", "run", "--release", "--"] => (4, None),
        [s, ..] if s.starts_with("examples/") && s.ends_with(".sh") => {
            (1, Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(s)))
        }
        _ => return Err(format!("unknown program in {:?}", entry.command)),
    };
    let inputs = cwd.join("inputs");
    let mut args: Vec<String> = words[skip..]
        .iter()
        .map(|w| match w.as_str() {
            "YOUR_MODEL" => world::your_model().to_str().unwrap().to_string(),
            "OPENAI_API_COMPAT_URL" => format!("{sim}/v1/chat/completions"),
            "/path/to/tokenizer" => world::your_model().to_str().unwrap().to_string(),
            w => match KEYS.iter().find(|(k, _)| *k == w) {
                Some((_, key)) => key.to_string(),
                None => w.replace("/path/to/", &format!("{}/", inputs.display())),
            },
        })
        .collect();
    for i in 1..args.len() {
        if args[i - 1] == "--url" && !args[i].starts_with(sim) {
            args[i] = to_simulator(&args[i], sim);
        }
    }
    let mut inv = Invocation { env, script, args };
    for s in &entry.scales {
        scale_down(&mut inv, s)?;
    }
    Ok(inv)
}

/// Applies one recorded scale-down, refusing anything but a smaller value of a scalable flag.
fn scale_down(inv: &mut Invocation, s: &Scale) -> Result<(), String> {
    if SCALABLE_SETTINGS.contains(&s.flag.as_str()) {
        let script = inv
            .script
            .as_ref()
            .ok_or(format!("{} is a recipe script's setting", s.flag))?;
        // The script's default, `NAME=${NAME:-DEFAULT}`.
        let text = std::fs::read_to_string(script).unwrap();
        let start = format!("{0}=${{{0}:-", s.flag);
        let default = text
            .lines()
            .find_map(|l| l.strip_prefix(&start)?.strip_suffix('}'))
            .ok_or(format!("{} has no setting {}", script.display(), s.flag))?;
        let old: Vec<String> = default.split_whitespace().map(str::to_string).collect();
        let new: Vec<String> = s
            .values
            .join(" ")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        smaller(&s.flag, &old, &new)?;
        inv.env.push((s.flag.clone(), new.join(" ")));
        return Ok(());
    }
    if !SCALABLE.contains(&s.flag.as_str()) {
        return Err(format!("{} may not be scaled down", s.flag));
    }
    let at = inv.args.iter().position(|a| *a == s.flag);
    match (at, s.added) {
        (None, true) => {
            inv.args.push(s.flag.clone());
            inv.args.extend(s.values.iter().cloned());
            Ok(())
        }
        (Some(_), true) => Err(format!("{} is in the command: `~`, not `~+`", s.flag)),
        (None, false) => Err(format!("{} is not in the command: `~+`", s.flag)),
        (Some(i), false) => {
            let old: Vec<String> = inv.args[i + 1..]
                .iter()
                .take_while(|a| !a.starts_with('-'))
                .cloned()
                .collect();
            smaller(&s.flag, &old, &s.values)?;
            inv.args
                .splice(i + 1..i + 1 + old.len(), s.values.iter().cloned());
            Ok(())
        }
    }
}

/// `new` has as many values as `old`, each at most the one it replaces.
fn smaller(flag: &str, old: &[String], new: &[String]) -> Result<(), String> {
    if old.len() != new.len() {
        return Err(format!("{flag}: {old:?} has another length than {new:?}"));
    }
    for (o, n) in old.iter().zip(new) {
        let (o, n): (f64, f64) = match (o.parse(), n.parse()) {
            (Ok(o), Ok(n)) => (o, n),
            _ => return Err(format!("{flag}: {o} → {n}: not numbers")),
        };
        if n > o {
            return Err(format!("{flag}: {n} is not a scale-down of {o}"));
        }
    }
    Ok(())
}

/// Runs one entry in a fresh folder; `Err` says what went wrong.
fn run_entry(entry: &Entry, hub: &FakeHub, standins: &Path) -> Result<(), String> {
    let cwd = tempfile::tempdir().unwrap();
    let cwd = cwd.path();
    world::write_inputs(cwd);
    let sim = SimServer::start(SimConfig {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        ..SimConfig::default()
    })
    .expect("simulator starts");
    let inv = prepare(entry, &sim.base_url(), cwd)?;
    let bin = env!("CARGO_BIN_EXE_llmperf");
    let mut cmd = match &inv.script {
        Some(script) => {
            let mut c = Command::new("bash");
            c.arg(script).env("LLMPERF", bin);
            c
        }
        None => Command::new(bin),
    };
    let cache = cwd.join(".cache");
    cmd.args(&inv.args)
        .current_dir(cwd)
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("MODELSCOPE_API_TOKEN")
        .env_remove("HF_TOKEN")
        .env("MODELSCOPE_ENDPOINT", hub.endpoint())
        .env("MODELSCOPE_CACHE", cache.join("modelscope"))
        .env("MODELSCOPE_HOME", cache.join("ms-home"))
        .env("HF_HUB_CACHE", cache.join("hf"))
        .env("HF_HOME", cache.join("hf-home"))
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env("LLMPERF_PYTHON", "python3")
        .env("PYTHONPATH", standins)
        .env("LLMPERF_BIN", bin)
        .env("STANDIN_VLLM_LOG", cwd.join("vllm.json"))
        .env("STANDIN_WANDB_LOG", cwd.join("wandb.jsonl"))
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(cwd.join("stdout.txt")).unwrap())
        .stderr(std::fs::File::create(cwd.join("stderr.txt")).unwrap());
    let _port = inv
        .local()
        .then(|| LOCAL_PORT.lock().unwrap_or_else(|p| p.into_inner()));
    if inv.local() && std::net::TcpListener::bind("127.0.0.1:8877").is_err() {
        return Err(
            "127.0.0.1:8877 is taken by another process: the --api local commands start their \
                    server on evalscope's default --port 8877"
                .into(),
        );
    }
    let mut child = cmd.spawn().expect("the command starts");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {TIMEOUT:?}\n{}", console(cwd)));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        return Err(format!("{status}\n{}", console(cwd)));
    }
    verify(entry, &inv, cwd, &sim).map_err(|e| format!("{e}\n{}", console(cwd)))
}

/// The end of what the command printed.
fn console(cwd: &Path) -> String {
    let tail = |name: &str| {
        let text = std::fs::read_to_string(cwd.join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(25)..].join("\n")
    };
    format!(
        "--- stdout:\n{}\n--- stderr:\n{}",
        tail("stdout.txt"),
        tail("stderr.txt")
    )
}

/// Every run folder under the outputs folder, as `ROOT/RUN` (`ROOT/sla_tuning/RUN` for SLA probes).
fn run_folders(outputs: &Path) -> BTreeMap<String, PathBuf> {
    files_under(outputs)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "benchmark_summary.json"))
        .map(|p| {
            let run = p.parent().unwrap().to_path_buf();
            let rel = run.strip_prefix(outputs).unwrap();
            // Drop the timestamp folder.
            let rel: PathBuf = rel.components().skip(1).collect();
            (rel.to_str().unwrap().to_string(), run)
        })
        .collect()
}

/// Checks one finished run folder: `Total Requests` and no failure.
fn check_summary(path: &str, dir: &Path, total: u64) -> Result<(), String> {
    let s = json_file(&dir.join("benchmark_summary.json"));
    let got = (&s["Total Requests"], &s["Failed Requests"]);
    if got != (&total.into(), &0.into()) {
        return Err(format!(
            "{path}: Total/Failed Requests {got:?}, asked for {total}, 0"
        ));
    }
    Ok(())
}

fn verify(entry: &Entry, inv: &Invocation, cwd: &Path, sim: &SimServer) -> Result<(), String> {
    if entry.expects == [Expect::Help] {
        let out = std::fs::read_to_string(cwd.join("stdout.txt")).unwrap();
        return match out.contains("--url") && out.contains("--parallel") {
            true => Ok(()),
            false => Err("no help printed".into()),
        };
    }
    let found = run_folders(&cwd.join(inv.outputs_dir()));
    let mut expected = BTreeSet::new();
    for e in &entry.expects {
        match e {
            Expect::Run { path, total } => {
                expected.insert(path.clone());
                let dir = found
                    .get(path)
                    .ok_or(format!("no run folder {path}: {found:?}"))?;
                check_summary(path, dir, *total)?;
            }
            Expect::Conversations {
                path,
                conversations,
            } => {
                expected.insert(path.clone());
                let dir = found
                    .get(path)
                    .ok_or(format!("no run folder {path}: {found:?}"))?;
                let db = rusqlite::Connection::open(dir.join("benchmark_data.db")).unwrap();
                let (turns, convs): (u64, u64) = db
                    .query_row(
                        "SELECT COUNT(*), COUNT(DISTINCT conversation_id) FROM result",
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(|e| format!("{path}: {e}"))?;
                if convs != *conversations {
                    return Err(format!(
                        "{path}: {convs} conversations, asked for {conversations}"
                    ));
                }
                check_summary(path, dir, turns)?;
            }
            Expect::Sla { root } => check_sla(root, &found)?,
            Expect::Help => return Err("`= help` goes alone".into()),
        }
    }
    let plain: BTreeSet<String> = found
        .keys()
        .filter(|k| !k.contains("/sla_tuning/"))
        .cloned()
        .collect();
    if !expected.is_empty() && plain != expected {
        return Err(format!("run folders {plain:?}, expected {expected:?}"));
    }
    check_side_effects(inv, cwd, sim)
}

/// Every probe run of an SLA auto-tune: `round(value × 2)` requests (evalscope's default multiplier).
fn check_sla(root: &str, found: &BTreeMap<String, PathBuf>) -> Result<(), String> {
    let prefix = format!("{root}/sla_tuning/");
    let probes: Vec<(&String, &PathBuf)> = found
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .collect();
    if probes.is_empty() {
        return Err(format!("no SLA probe runs under {prefix}: {found:?}"));
    }
    let summary = probes[0].1.join("../../sla_summary.json");
    if !summary.is_file() {
        return Err(format!("{root}: no sla_summary.json"));
    }
    for (path, dir) in probes {
        // sla_<var>_<value>_run_<i>
        let name = path.rsplit('/').next().unwrap();
        let value: f64 = name
            .split('_')
            .nth(2)
            .and_then(|v| v.parse().ok())
            .ok_or(format!("{path}: not sla_<var>_<value>_run_<i>"))?;
        check_summary(path, dir, (value * 2.0).round() as u64)?;
    }
    Ok(())
}

/// What the command should have done besides its run folders: the API key on every request, the local
/// server started as vLLM, the wandb key handed to wandb.
fn check_side_effects(inv: &Invocation, cwd: &Path, sim: &SimServer) -> Result<(), String> {
    if let Some(key) = inv.flag("--api-key") {
        let bearer = format!("Bearer {key}");
        let requests = sim.requests();
        let bad = requests
            .iter()
            .filter(|(_, _, h)| !h.iter().any(|(k, v)| k == "authorization" && *v == bearer));
        if requests.is_empty() || bad.count() > 0 {
            return Err(format!("not every request carried {bearer:?}"));
        }
    }
    if inv.local() {
        let log = json_file(&cwd.join("vllm.json"));
        let model = inv.flag("--model").unwrap();
        let argv = log["argv"].to_string();
        if !argv.contains(&format!("\"--model\",\"{model}\""))
            || !argv.contains("\"--port\",\"8877\"")
        {
            return Err(format!("the stand-in vLLM was started with {argv}"));
        }
    }
    if let Some(key) = inv.flag("--wandb-api-key") {
        let log = std::fs::read_to_string(cwd.join("wandb.jsonl")).unwrap_or_default();
        if !log.contains(&format!("\"key\": \"{key}\"")) || !log.contains("\"finish\"") {
            return Err(format!("wandb was not logged in and finished: {log}"));
        }
    }
    Ok(())
}

#[test]
fn every_documented_command_runs_unchanged() {
    let entries = fixture::entries();
    for e in &entries {
        for w in fixture::words(
            &e.command,
            &BTreeMap::from([("DASHSCOPE_API_KEY", String::new())]),
        )
        .windows(2)
        .filter(|w| w[0] == "--tokenizer-path" && w[1].contains('/') && !w[1].starts_with('/'))
        {
            assert!(
                world::TOKENIZERS.iter().any(|(id, _)| *id == w[1]),
                "line {}: the fake hub does not serve {}",
                e.line,
                w[1]
            );
        }
    }
    let hub = world::hub();
    let standins_dir = tempfile::tempdir().unwrap();
    let standins = world::standins(standins_dir.path());
    // Longest first (SLA searches, then the longest sweeps: most of their time is evalscope's 5 s
    // --sleep-interval between runs), so the slowest command does not start last.
    let mut runnable: Vec<&Entry> = entries.iter().filter(|e| e.skip.is_none()).collect();
    runnable.sort_by_key(|e| {
        let sla = e.expects.iter().any(|x| matches!(x, Expect::Sla { .. }));
        std::cmp::Reverse(if sla { usize::MAX } else { e.expects.len() })
    });
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(entry) = runnable.get(i) else { break };
                let started = Instant::now();
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    run_entry(entry, &hub, &standins)
                }))
                .unwrap_or_else(|panic| {
                    let why = panic.downcast_ref::<String>().cloned();
                    let why = why.or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                    Err(format!("panicked: {}", why.unwrap_or_default()))
                });
                eprintln!(
                    "{:>5.1} s  line {:>3}  {}  {}",
                    started.elapsed().as_secs_f64(),
                    entry.line,
                    if result.is_ok() { "ok  " } else { "FAIL" },
                    entry.pages
                );
                results.lock().unwrap().push((entry, result));
            });
        }
    });
    for e in entries.iter().filter(|e| e.skip.is_some()) {
        eprintln!(
            "skipped  line {:>3}  {}: {}",
            e.line,
            e.pages,
            e.skip.as_deref().unwrap()
        );
    }
    let results = results.into_inner().unwrap();
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(e, r)| {
            r.as_ref()
                .err()
                .map(|why| format!("line {} ({}): {}\n  {why}", e.line, e.pages, e.command))
        })
        .collect();
    eprintln!(
        "{} commands in {:.1} s, {} failed",
        results.len(),
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

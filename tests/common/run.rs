//! The [`Run`] builder: one `llmperf` invocation in a fresh temporary output folder (a server's URL,
//! `--model m` and the test's flags, written like a command line), its exit code and output, and the
//! [`RunDir`] folders it wrote (summary, percentiles, arguments, stored rows).

use std::ffi::{OsStr, OsString};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::rc::Rc;

use llmperf::sim::SimServer;
use serde_json::Value;

use super::fake_hub::FakeHub;
use super::{json_file, ok, rows, run_root, stderr, Row};

/// One `llmperf` invocation: its flags, its environment, the folder it writes under (`--outputs-dir`,
/// empty until it runs) and a second folder for the input files a test writes ([`Run::file`]). Both
/// folders live as long as the `Run` (or a [`RunDir`] of it). It may be run more than once. Like
/// [`llmperf_command`](super::llmperf_command), it runs with hub downloads off (`HF_HUB_OFFLINE=1`) and
/// `--sleep-interval 0` unless the test gives its own.
pub struct Run {
    out: Rc<tempfile::TempDir>,
    files: Rc<tempfile::TempDir>,
    args: Vec<String>,
    env: Vec<(String, Option<OsString>)>,
}

impl Default for Run {
    fn default() -> Run {
        Run::new()
    }
}

impl Run {
    /// A run with no flags but the ones the test adds (and `--outputs-dir`).
    pub fn new() -> Run {
        Run {
            out: Rc::new(tempfile::tempdir().expect("temporary folder")),
            files: Rc::new(tempfile::tempdir().expect("temporary folder")),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// A run against the simulator `sim`: `--url <sim>/v1 --model m`.
    pub fn against(sim: &SimServer) -> Run {
        Run::with_url(&format!("{}/v1", sim.base_url()))
    }

    /// A run against the simulator's `path` (`/v1/chat/completions`) with `--model m`.
    pub fn at(sim: &SimServer, path: &str) -> Run {
        Run::with_url(&format!("{}{path}", sim.base_url()))
    }

    /// A run against `url` with `--model m`.
    pub fn with_url(url: &str) -> Run {
        Run::new().args(&["--url", url, "--model", "m"])
    }

    /// Replaces the model (`m`), or adds `--model` to a run that has none.
    pub fn model(mut self, model: &str) -> Run {
        match self.args.iter().position(|a| a == "--model") {
            Some(i) => self.args[i + 1] = model.to_string(),
            None => self.args.extend(["--model".to_string(), model.to_string()]),
        }
        self
    }

    /// Writes under `other`'s output folder and input files' folder instead of its own (a second
    /// invocation into the same tree).
    pub fn sharing_out(mut self, other: &Run) -> Run {
        self.out = Rc::clone(&other.out);
        self.files = Rc::clone(&other.files);
        self
    }

    /// Adds flags written as on a command line: words split at white space, a `'…'` or `"…"` part taken
    /// as written (no escapes), so `--prompt 'two words' --extra-args '{"ignore_eos": true}'`.
    pub fn flags(self, line: &str) -> Run {
        let words = words(line);
        self.args(&words.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Adds flags, one word each.
    pub fn args(mut self, args: &[&str]) -> Run {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Adds one flag and its value (a path, a URL, a number the test computed).
    pub fn flag(mut self, flag: &str, value: impl AsRef<OsStr>) -> Run {
        let value = value.as_ref().to_str().expect("a UTF-8 value").to_string();
        self.args.extend([flag.to_string(), value]);
        self
    }

    /// Writes `contents` to the input file `name` ([`Run::file`]) and passes its path as `flag`.
    pub fn input(self, flag: &str, name: &str, contents: impl AsRef<[u8]>) -> Run {
        let path = self.file(name, contents);
        self.flag(flag, path)
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Run {
        self.env
            .push((key.to_string(), Some(value.as_ref().to_os_string())));
        self
    }

    /// Removes an environment variable from the process (one the test's own environment may have).
    pub fn env_remove(mut self, key: &str) -> Run {
        self.env.push((key.to_string(), None));
        self
    }

    /// Downloads allowed (`HF_HUB_OFFLINE` and the test's own `MODELSCOPE_API_TOKEN` removed), into caches
    /// under `cache`: ModelScope's `cache/modelscope` (its saved login in `cache/ms-home`), Hugging Face's
    /// `cache/hf`. Both endpoints stay closed local ports unless [`Run::hub`] names a fake hub.
    pub fn online(self, cache: &Path) -> Run {
        let hf_set = self.env.iter().any(|(k, _)| k == "HF_ENDPOINT");
        let run = self
            .env_remove("HF_HUB_OFFLINE")
            .env_remove("MODELSCOPE_API_TOKEN")
            .env("MODELSCOPE_CACHE", cache.join("modelscope"))
            .env("MODELSCOPE_HOME", cache.join("ms-home"))
            .env("HF_HUB_CACHE", cache.join("hf"));
        if hf_set {
            run
        } else {
            run.env("HF_ENDPOINT", "http://127.0.0.1:9")
        }
    }

    /// Points the run at a fake hub (`MODELSCOPE_ENDPOINT` or `HF_ENDPOINT`).
    pub fn hub(self, hub: &FakeHub) -> Run {
        let (key, value) = hub.env();
        self.env(key, value)
    }

    /// Writes an input file `name` (outside the output folder) and returns its path.
    pub fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.files.path().join(name);
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// The folder the results go under (`--outputs-dir`).
    pub fn out(&self) -> &Path {
        self.out.path()
    }

    /// How many entries the output folder has (0: the run wrote nothing).
    pub fn out_entries(&self) -> usize {
        std::fs::read_dir(self.out.path()).map_or(0, |d| d.count())
    }

    /// The command, ready to spawn (for a test that signals or watches the process).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmperf"));
        cmd.env("HF_HUB_OFFLINE", "1")
            .env("MODELSCOPE_ENDPOINT", "http://127.0.0.1:9")
            .args(&self.args)
            .arg("--outputs-dir")
            .arg(self.out.path());
        if !self.args.iter().any(|a| a == "--sleep-interval") {
            cmd.args(["--sleep-interval", "0"]);
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Runs it and returns what it printed and its exit status.
    pub fn output(&self) -> Output {
        self.command().output().expect("llmperf runs")
    }

    /// Runs it, asserts success and returns stdout.
    pub fn ok(&self) -> String {
        ok(&self.output())
    }

    /// Runs it, asserts the exit code and returns stderr.
    pub fn fails(&self, code: i32) -> String {
        let output = self.output();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "stderr:\n{err}");
        err
    }

    /// Runs it and asserts exit 4: every file written, but no measured request of the invocation
    /// succeeded. Returns stderr.
    pub fn no_success(&self) -> String {
        self.fails(4)
    }

    /// `<outputs-dir>/<the one timestamp>/<name>` (no timestamp with `--no-timestamp`), where the name is
    /// `--name` if given, else `--model` as written (a test whose name differs, as `org/model` does, calls
    /// [`run_root`] itself).
    pub fn root(&self) -> PathBuf {
        let last = |flag: &str| {
            let i = self.args.iter().rposition(|a| a == flag)?;
            self.args.get(i + 1).map(String::as_str)
        };
        let name = last("--name")
            .or_else(|| last("--model"))
            .expect("--name or --model");
        if self.args.iter().any(|a| a == "--no-timestamp") {
            self.out.path().join(name)
        } else {
            run_root(self.out.path(), name)
        }
    }

    /// The run folder `dir_name` (`parallel_1_number_2`) under [`Run::root`].
    pub fn run_dir(&self, dir_name: &str) -> RunDir {
        RunDir {
            path: self.root().join(dir_name),
            _out: Rc::clone(&self.out),
        }
    }

    /// The one run folder under [`Run::root`] (asserted to be the only one), whatever its name.
    pub fn single_run(&self) -> RunDir {
        let runs: Vec<PathBuf> = std::fs::read_dir(self.root())
            .expect("the run root")
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(runs.len(), 1, "one run folder: {runs:?}");
        RunDir {
            path: runs[0].clone(),
            _out: Rc::clone(&self.out),
        }
    }

    /// Runs it, asserts success and returns the run folder `dir_name` (which keeps the output folder).
    pub fn ok_dir(&self, dir_name: &str) -> RunDir {
        self.ok();
        self.run_dir(dir_name)
    }
}

/// One run folder (`parallel_N_number_M`, `rate_R_number_M`) and the files in it; the output folder lives
/// as long as this does.
#[derive(Clone)]
pub struct RunDir {
    path: PathBuf,
    _out: Rc<tempfile::TempDir>,
}

impl RunDir {
    /// `benchmark_summary.json`.
    pub fn summary(&self) -> Value {
        json_file(&self.path.join("benchmark_summary.json"))
    }

    /// `benchmark_percentile.json`.
    pub fn percentiles(&self) -> Value {
        json_file(&self.path.join("benchmark_percentile.json"))
    }

    /// `benchmark_args.json`.
    pub fn args(&self) -> Value {
        json_file(&self.path.join("benchmark_args.json"))
    }

    /// `benchmark_data.db`.
    pub fn db(&self) -> PathBuf {
        self.path.join("benchmark_data.db")
    }

    /// Every stored row of `benchmark_data.db`, in insertion order.
    pub fn rows(&self) -> Vec<Row> {
        rows(&self.db())
    }
}

impl Deref for RunDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// A command line's words: split at white space; a `'…'` or `"…"` part is taken as written, white space
/// included, and joins the text next to it (`a'b c'` is one word `ab c`).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(ch) => w.push(ch),
                        None => panic!("unterminated {c} in {line:?}"),
                    }
                }
            }
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn words_split_like_a_shell_without_escapes() {
    assert_eq!(
        words(r#" --prompt 'two words'  --extra-args '{"a": "b c"}' -x a"b"c "" "#),
        [
            "--prompt",
            "two words",
            "--extra-args",
            r#"{"a": "b c"}"#,
            "-x",
            "abc",
            ""
        ]
    );
    assert!(words("  ").is_empty());
}

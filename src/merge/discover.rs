//! Finding shard results and checking they form one plan: the same fingerprint and shard count, every
//! shard once, every run complete. Every failure here is a usage error that names what is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::UsageError;
use crate::run_folder::{find_runs, RunDir};
use crate::shard::ARGS_KEY;

/// How deep below each given folder run folders are looked for (`<dir>/<stamp>/<root>/<run>`).
const MAX_DEPTH: usize = 4;

/// One run folder of one shard.
#[derive(Debug, Clone)]
pub struct ShardRun {
    /// The run folder.
    pub dir: PathBuf,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC` when the run started (`None`: it never started).
    pub wall_minus_monotonic_s: Option<f64>,
    /// Why the run cannot be merged, if it cannot.
    pub failure: Option<String>,
}

impl ShardRun {
    /// The shard record in its arguments.
    pub fn record(&self) -> &Map<String, Value> {
        self.args
            .get(ARGS_KEY)
            .and_then(Value::as_object)
            .expect("only runs with a shard record are kept")
    }
}

/// One shard's run root.
#[derive(Debug, Clone)]
pub struct ShardRoot {
    /// The root folder.
    pub dir: PathBuf,
    /// K.
    pub index: u32,
    /// N.
    pub count: u32,
    /// The plan fingerprint.
    pub fingerprint: String,
    /// Its runs by folder name.
    pub runs: BTreeMap<String, ShardRun>,
}

/// A complete (or, with `--allow-missing`, knowingly incomplete) set of shards of one plan.
#[derive(Debug)]
pub struct ShardSet {
    /// N.
    pub count: u32,
    /// The plan fingerprint.
    pub fingerprint: String,
    /// The shards found, by index.
    pub shards: BTreeMap<u32, ShardRoot>,
    /// Every run folder name of the plan, in sweep order (as the first complete shard ran them).
    pub run_names: Vec<String>,
}

impl ShardSet {
    /// Shards that cannot contribute `run`: absent, or their run failed.
    pub fn missing(&self, run: &str) -> Vec<(u32, String)> {
        (0..self.count)
            .filter_map(|k| match self.shards.get(&k) {
                None => Some((k, "no result found".to_string())),
                Some(root) => match root.runs.get(run) {
                    None => Some((k, format!("{} has no {run}", root.dir.display()))),
                    Some(r) => r.failure.clone().map(|why| (k, why)),
                },
            })
            .collect()
    }
}

/// Why a shard's run cannot be merged, or `None` when it finished.
fn run_failure(run: &RunDir, record: &Map<String, Value>) -> Option<String> {
    let shown = run.path().display();
    if record
        .get("wall_minus_monotonic_s")
        .and_then(Value::as_f64)
        .is_none()
    {
        return Some(format!(
            "{shown}: the run never started (no start recorded)"
        ));
    }
    if !run.has_database() {
        return Some(format!("{shown}: no database (the run stored no rows)"));
    }
    match run.read_summary() {
        None => Some(format!("{shown}: no summary (the shard did not finish)")),
        Some(s) if s.get("Interrupted") == Some(&Value::Bool(true)) => {
            Some(format!("{shown}: the run was interrupted"))
        }
        Some(_) => None,
    }
}

fn field_u32(record: &Map<String, Value>, key: &str) -> Option<u32> {
    record
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
}

/// Reads every shard run under `dirs` into shard roots (folders whose runs carry no shard record are an
/// error: they are not shard results).
pub fn find_shards(dirs: &[PathBuf]) -> Result<Vec<ShardRoot>, UsageError> {
    let mut run_dirs = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(UsageError(format!("{}: no such folder", d.display())));
        }
        let found = find_runs(d, MAX_DEPTH);
        if found.is_empty() {
            return Err(UsageError(format!(
                "{}: no run folder (with the run's arguments) found in it",
                d.display()
            )));
        }
        run_dirs.extend(found.into_iter().map(|r| r.path().to_path_buf()));
    }
    run_dirs.sort();
    run_dirs.dedup();
    let mut roots: BTreeMap<PathBuf, ShardRoot> = BTreeMap::new();
    for dir in run_dirs {
        let run = RunDir::at(&dir);
        let Some(args) = run.read_args() else {
            return Err(UsageError(format!(
                "{}: its arguments are not a JSON object",
                run.args().display()
            )));
        };
        let Some(record) = args.get(ARGS_KEY).and_then(Value::as_object) else {
            return Err(UsageError(format!(
                "{}: not a shard result (its arguments have no {ARGS_KEY}; run with --shard K/N)",
                dir.display()
            )));
        };
        let (Some(index), Some(count), Some(fingerprint)) = (
            field_u32(record, "index"),
            field_u32(record, "count"),
            record.get("plan_fingerprint").and_then(Value::as_str),
        ) else {
            return Err(UsageError(format!(
                "{}: its {ARGS_KEY} record is incomplete",
                dir.display()
            )));
        };
        let failure = run_failure(&run, record);
        let wall = record.get("wall_minus_monotonic_s").and_then(Value::as_f64);
        let root_dir = dir.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let root = roots.entry(root_dir.clone()).or_insert_with(|| ShardRoot {
            dir: root_dir.clone(),
            index,
            count,
            fingerprint: fingerprint.to_string(),
            runs: BTreeMap::new(),
        });
        if (root.index, root.count, root.fingerprint.as_str()) != (index, count, fingerprint) {
            return Err(UsageError(format!(
                "{}: its runs disagree about the shard or plan ({}/{} vs {index}/{count})",
                root_dir.display(),
                root.index,
                root.count
            )));
        }
        root.runs.insert(
            name,
            ShardRun {
                wall_minus_monotonic_s: wall,
                failure,
                dir,
                args,
            },
        );
    }
    Ok(roots.into_values().collect())
}

/// Checks that `roots` are shards of one plan, each once; missing or failed shards are an error unless
/// `allow_missing`.
pub fn check(roots: Vec<ShardRoot>, allow_missing: bool) -> Result<ShardSet, UsageError> {
    let first = roots
        .first()
        .ok_or_else(|| UsageError("no shard results found".to_string()))?;
    let (fingerprint, count) = (first.fingerprint.clone(), first.count);
    let mixed: Vec<String> = roots
        .iter()
        .filter(|r| r.fingerprint != fingerprint || r.count != count)
        .map(|r| {
            format!(
                "{} (plan {}, shard {}/{})",
                r.dir.display(),
                r.fingerprint,
                r.index,
                r.count
            )
        })
        .collect();
    if !mixed.is_empty() {
        return Err(UsageError(format!(
            "the shards come from different plans: {} has plan {fingerprint} with {count} shards, but {}; merge only the shards of one run (same arguments apart from --shard)",
            first.dir.display(),
            mixed.join(", ")
        )));
    }
    let mut shards: BTreeMap<u32, ShardRoot> = BTreeMap::new();
    for root in roots {
        if let Some(other) = shards.get(&root.index) {
            return Err(UsageError(format!(
                "shard {}/{count} appears twice: {} and {}; give each shard's result once",
                root.index,
                other.dir.display(),
                root.dir.display()
            )));
        }
        shards.insert(root.index, root);
    }
    let run_names: Vec<String> = {
        let mut names: Vec<(String, u64)> = Vec::new();
        for root in shards.values() {
            for (name, run) in &root.runs {
                if !names.iter().any(|(n, _)| n == name) {
                    let order = run
                        .args
                        .get("dataset_offset")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    names.push((name.clone(), order));
                }
            }
        }
        names.sort_by_key(|(_, order)| *order);
        names.into_iter().map(|(n, _)| n).collect()
    };
    let set = ShardSet {
        count,
        fingerprint,
        shards,
        run_names,
    };
    if let Some(run) = set
        .run_names
        .iter()
        .find(|run| set.missing(run).len() == count as usize)
    {
        return Err(UsageError(format!(
            "no shard finished {run}: there is nothing to merge for it"
        )));
    }
    if !allow_missing {
        let problems: Vec<String> = set
            .run_names
            .iter()
            .flat_map(|run| set.missing(run))
            .map(|(k, why)| format!("shard {k}/{count}: {why}"))
            .collect();
        if !problems.is_empty() {
            return Err(UsageError(format!(
                "the shard set is incomplete:\n  {}\nrerun the missing shards, or pass --allow-missing to merge the rest (reported as \"Shards Missing\")",
                problems.join("\n  ")
            )));
        }
    }
    Ok(set)
}

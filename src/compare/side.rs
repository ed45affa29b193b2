//! One side of a comparison (BASE or NEW): a run root — llmperf's, evalscope's own, or a merged shard
//! root — or a single run folder, found through `run_folder`'s readers; its points (one per
//! `--parallel`/`--rate` × `--number` pair, named by the run's own arguments) and each point's runs
//! (repeat 1, then `repeat_<k>/` of a `--repeat` run).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::root_error::RootError;
use super::CompareError;
use crate::plan::Load;
use crate::run_folder::{find_runs, RunDir, RunRoot};

/// A point of a sweep: its load and `--number`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointKey {
    /// Closed loop with its concurrency (and pacing), or open loop with its rate.
    pub load: Load,
    /// Measured requests.
    pub number: u64,
}

impl PointKey {
    /// The point's load as a short text: `parallel 4` or `rate 5.0`.
    pub fn load_text(&self) -> String {
        match self.load.parallel() {
            Some(p) => format!("parallel {p}"),
            None => format!(
                "rate {}",
                crate::pyjson::float_repr(self.load.rate_as_written())
            ),
        }
    }

    /// The key of the run whose arguments are `args`, `None` when they name no load.
    fn of_args(args: &Map<String, Value>) -> Option<PointKey> {
        let number = args.get("number")?.as_u64()?;
        let parallel = args.get("parallel")?.as_i64()?;
        let rate = args.get("rate").and_then(Value::as_f64).unwrap_or(-1.0);
        let open = args
            .get("open_loop")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let load = Load::from_written(parallel, rate, number, open)?;
        Some(PointKey { load, number })
    }
}

impl fmt::Display for PointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, number {}", self.load_text(), self.number)
    }
}

/// One point of a side and its runs.
#[derive(Debug, Clone)]
pub struct Point {
    /// Which point.
    pub key: PointKey,
    /// Its runs: repeat 1 first, then the other repeats in order.
    pub runs: Vec<RunDir>,
    /// Repeat 1's arguments.
    pub args: Map<String, Value>,
}

/// BASE or NEW.
#[derive(Debug, Clone)]
pub struct Side {
    /// As given.
    pub path: PathBuf,
    /// Its points, in folder order.
    pub points: Vec<Point>,
}

impl Side {
    /// Reads `path` (`label`: "BASE" or "NEW", for messages): a run folder, a run root, or a folder that
    /// holds exactly one run root (the timestamp level).
    pub fn read(label: &'static str, path: &Path) -> Result<Side, CompareError> {
        let bad = |why: String| CompareError::NotARun {
            side: label,
            path: path.to_path_buf(),
            why,
        };
        if !path.is_dir() {
            return Err(bad("no such folder".into()));
        }
        let root = if RunDir::is_run(path) {
            None
        } else {
            Some(find_root(path).map_err(|e| bad(e.to_string()))?)
        };
        let mut side = Side {
            path: path.to_path_buf(),
            points: Vec::new(),
        };
        let first = match &root {
            Some(root) => find_runs(root.path(), 1),
            None => vec![RunDir::at(path)],
        };
        for run in first {
            side.add(label, run, true)?;
        }
        if let Some(root) = &root {
            for (_, repeat) in root.repeats() {
                for run in find_runs(repeat.path(), 1) {
                    side.add(label, run, false)?;
                }
            }
        }
        if side.points.is_empty() {
            return Err(bad("it holds no run folder".into()));
        }
        Ok(side)
    }

    /// Adds `run` as a new point (`first`: repeat 1) or as a repeat of the point it matches.
    fn add(&mut self, label: &'static str, run: RunDir, first: bool) -> Result<(), CompareError> {
        let args = run.read_args().ok_or_else(|| CompareError::BadRun {
            path: run.path().to_path_buf(),
            why: format!("{label}: {} is not a JSON object", run.args().display()),
        })?;
        let key = PointKey::of_args(&args).ok_or_else(|| CompareError::BadRun {
            path: run.path().to_path_buf(),
            why: format!("{label}: its arguments name no parallel/rate and number"),
        })?;
        match self.points.iter_mut().find(|p| p.key == key) {
            Some(point) if !first => point.runs.push(run),
            Some(_) => {
                return Err(CompareError::BadRun {
                    path: run.path().to_path_buf(),
                    why: format!("{label}: two run folders of the same point ({key})"),
                })
            }
            // A repeat of a point repeat 1 does not have: a point of its own.
            None => self.points.push(Point {
                key,
                runs: vec![run],
                args,
            }),
        }
        Ok(())
    }
}

/// The run root at or under `path`: `path` itself when run folders sit directly in it, else the one root
/// found up to three levels down (`outputs/<stamp>/<name>`); an error names the candidates when there are
/// several, or says that there is none.
fn find_root(path: &Path) -> Result<RunRoot, RootError> {
    if !find_runs(path, 1).is_empty() {
        return Ok(RunRoot::at(path));
    }
    let mut parents: Vec<PathBuf> = find_runs(path, 3)
        .iter()
        .filter_map(|r| r.path().parent().map(Path::to_path_buf))
        .collect();
    parents.dedup();
    match parents.as_slice() {
        [] => Err(RootError::NoRun),
        [one] => Ok(RunRoot::at(one)),
        many => Err(RootError::Several(many.to_vec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, name: &str, parallel: i64, number: u64) {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        let args = serde_json::json!({"number": number, "parallel": parallel, "rate": -1.0, "open_loop": false});
        std::fs::write(d.join("benchmark_args.json"), args.to_string()).unwrap();
    }

    #[test]
    fn points_and_their_repeats_are_found_at_any_depth() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("20260101_000000/m");
        run(&root, "parallel_1_number_10", 1, 10);
        run(&root, "parallel_4_number_10", 4, 10);
        run(&root, "repeat_2/parallel_4_number_10", 4, 10);
        run(&root, "repeat_3/parallel_4_number_10", 4, 10);
        for given in [t.path().to_path_buf(), root.clone()] {
            let side = Side::read("BASE", &given).unwrap();
            let runs: Vec<usize> = side.points.iter().map(|p| p.runs.len()).collect();
            assert_eq!(runs, [1, 3]);
            assert_eq!(side.points[1].key.to_string(), "parallel 4, number 10");
            assert!(side.points[1].runs[2]
                .path()
                .ends_with("repeat_3/parallel_4_number_10"));
        }
        let single = Side::read("NEW", &root.join("parallel_1_number_10")).unwrap();
        assert_eq!(single.points.len(), 1);
    }

    #[test]
    fn folders_that_are_not_runs_are_named() {
        let t = tempfile::tempdir().unwrap();
        let err = Side::read("BASE", &t.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("BASE") && err.to_string().contains("no such folder"));
        let err = Side::read("NEW", t.path()).unwrap_err().to_string();
        assert!(err.contains("no run folder"), "{err}");
        run(&t.path().join("a"), "parallel_1_number_1", 1, 1);
        run(&t.path().join("b"), "parallel_1_number_1", 1, 1);
        let err = Side::read("NEW", t.path()).unwrap_err().to_string();
        assert!(err.contains("2 run roots"), "{err}");
    }
}

//! Reading run folders back — llmperf's or evalscope's own, which are the same files: finding the run
//! folders under a path (`llmperf merge`'s discovery), and a run's arguments, summary and server series.

use std::path::Path;

use serde_json::{Map, Value};

use super::layout::{RunDir, RunRoot};

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Every run folder at most `depth` levels below `dir` (and `dir` itself), in path order; a run folder's
/// own subfolders are not searched.
pub fn find_runs(dir: &Path, depth: usize) -> Vec<RunDir> {
    let mut out = Vec::new();
    find_into(dir, depth, &mut out);
    out
}

fn find_into(dir: &Path, depth: usize, out: &mut Vec<RunDir>) {
    if RunDir::is_run(dir) {
        out.push(RunDir::at(dir));
        return;
    }
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        find_into(&d, depth - 1, out);
    }
}

impl RunRoot {
    /// The repeats (`--repeat`) this root holds beyond repeat 1: `(k, root of repeat k)`, by k.
    pub fn repeats(&self) -> Vec<(u32, RunRoot)> {
        let Ok(entries) = std::fs::read_dir(self.path()) else {
            return Vec::new();
        };
        let mut out: Vec<(u32, RunRoot)> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| {
                let k = RunRoot::repeat_index(&e.file_name().to_string_lossy())?;
                Some((k, self.repeat(k)))
            })
            .collect();
        out.sort_by_key(|(k, _)| *k);
        out
    }
}

impl RunDir {
    /// The run's arguments, `None` when the file is missing or not a JSON object.
    pub fn read_args(&self) -> Option<Map<String, Value>> {
        match read_json(&self.args())? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The run's summary, `None` when the run never finished (no file) or it cannot be read.
    pub fn read_summary(&self) -> Option<Value> {
        read_json(&self.summary())
    }

    /// Whether the run's rows are there.
    pub fn has_database(&self) -> bool {
        self.database().is_file()
    }

    /// The server's series (`--server-metrics`), `None` when the run has none. Python writes a missing
    /// value as `NaN`, which JSON has not: read as `null`.
    pub fn read_server_metrics(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.server_metrics()).ok()?;
        serde_json::from_str(&text.replace("NaN", "null")).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_run_folders_to_a_depth_and_not_inside_runs() {
        let dir = tempfile::tempdir().unwrap();
        let run = |p: &str| {
            let d = dir.path().join(p);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(RunDir::at(&d).args(), "{}").unwrap();
        };
        run("stamp/root/parallel_1_number_2");
        run("stamp/root/parallel_1_number_2/nested");
        run("stamp/root/sla_tuning/sla_parallel_1_run_1");
        std::fs::create_dir_all(dir.path().join("stamp/empty")).unwrap();
        let names = |depth| -> Vec<String> {
            find_runs(dir.path(), depth)
                .iter()
                .map(|r| {
                    r.path()
                        .strip_prefix(dir.path())
                        .unwrap()
                        .display()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(names(2), Vec::<String>::new());
        assert_eq!(names(3), vec!["stamp/root/parallel_1_number_2"]);
        assert_eq!(
            names(4),
            vec![
                "stamp/root/parallel_1_number_2",
                "stamp/root/sla_tuning/sla_parallel_1_run_1"
            ]
        );
        let r = RunDir::at(dir.path().join("stamp/root/parallel_1_number_2"));
        assert_eq!(r.read_args(), Some(Map::new()));
        assert_eq!(r.read_summary(), None);
        assert!(!r.has_database());
    }
}

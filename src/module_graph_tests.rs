//! The module graph as a test: `cargo test` fails when a top-level module of `src/` uses one that uses it
//! back, directly or through others, naming the modules of the cycle and the files whose `crate::` paths
//! make it. The graph is read the way `scripts/module_graph.py` reads it (which prints it): every
//! `crate::<module>` path in product code, comments and `#[cfg(test)]` items left out, files whose name
//! ends in `tests` and `test_support` skipped. `docs/design.md` lists the layers the graph follows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module → (module it uses → the files that use it).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The file's code without comment lines, trailing `//` comments and `#[cfg(test)]` items (brace
/// counting per line, as the script does).
fn product_text(text: &str) -> String {
    let mut kept = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut pending_test = false;
    let mut depth: i64 = 0;
    for line in text.lines() {
        let stripped = line.trim();
        if stripped.starts_with("//") {
            continue;
        }
        if skip_depth.is_none() && stripped.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if pending_test {
            pending_test = false;
            if stripped.ends_with(';') {
                continue; // `mod tests;`
            }
            skip_depth = Some(depth);
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        kept.push(line.split("//").next().unwrap_or(""));
    }
    kept.join("\n")
}

/// The module names after each `crate::` in `code`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(i, m)| {
            code[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The graph of the top-level modules under `src`.
fn graph(src: &Path) -> Graph {
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = stem(&path);
        let is_module = path.is_dir() || path.extension().is_some_and(|x| x == "rs");
        if !is_module || matches!(name.as_str(), "main" | "lib" | "test_support") {
            continue;
        }
        if name.ends_with("tests") {
            continue;
        }
        modules.push((name, path));
    }
    let names: BTreeSet<String> = modules.iter().map(|(n, _)| n.clone()).collect();
    let mut g = Graph::new();
    for (name, path) in modules {
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else {
            files.push(path);
        }
        let uses = g.entry(name.clone()).or_default();
        for file in files.iter().filter(|f| !stem(f).ends_with("tests")) {
            let text = std::fs::read_to_string(file).unwrap();
            for used in crate_paths(&product_text(&text)) {
                if used != name && names.contains(&used) {
                    let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
                    uses.entry(used).or_default().insert(shown);
                }
            }
        }
    }
    g
}

/// Every module reachable from `from` (itself included).
fn reachable(g: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([from.to_string()]);
    let mut stack = vec![from.to_string()];
    while let Some(m) = stack.pop() {
        for used in g.get(&m).into_iter().flat_map(|u| u.keys()) {
            if seen.insert(used.clone()) {
                stack.push(used.clone());
            }
        }
    }
    seen
}

/// The groups of modules that reach each other (strongly connected, more than one module), each with
/// the edges inside it: `a -> b (files)`.
fn cycles(g: &Graph) -> Vec<(Vec<String>, Vec<String>)> {
    let reach: BTreeMap<&String, BTreeSet<String>> =
        g.keys().map(|m| (m, reachable(g, m))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for m in g.keys() {
        if done.contains(m) {
            continue;
        }
        let group: Vec<String> = reach[m]
            .iter()
            .filter(|other| reach.get(other).is_some_and(|r| r.contains(m)))
            .cloned()
            .collect();
        done.extend(group.iter().cloned());
        if group.len() < 2 {
            continue;
        }
        let edges = group
            .iter()
            .flat_map(|a| {
                g[a].iter()
                    .filter(|(b, _)| group.contains(b))
                    .map(move |(b, files)| {
                        let files: Vec<&str> = files.iter().map(String::as_str).collect();
                        format!("{a} -> {b} ({})", files.join(", "))
                    })
            })
            .collect();
        found.push((group, edges));
    }
    found
}

fn report(found: &[(Vec<String>, Vec<String>)]) -> String {
    found
        .iter()
        .map(|(group, edges)| format!("cycle: {}\n  {}", group.join(" <-> "), edges.join("\n  ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(
        g.contains_key("plan") && g["plan"].contains_key("cli"),
        "{g:?}"
    );
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "import cycles between top-level modules of src/ (see docs/design.md for the layers; move the \
         shared type down to the lower module):\n{}",
        report(&found)
    );
}

#[test]
fn a_cycle_through_a_third_module_is_found_and_test_code_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("a")).unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "//! crate::c in a comment\nuse crate::b::X;\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub fn f() { crate::c::g() }\n").unwrap();
    std::fs::write(
        src.join("c.rs"),
        "use crate::a::Y; // crate::d\n#[cfg(test)]\nmod t {\n    use crate::d::Z;\n}\n",
    )
    .unwrap();
    std::fs::write(src.join("d.rs"), "use crate::a::W;\n").unwrap();
    std::fs::write(src.join("d_tests.rs"), "use crate::c::V;\n").unwrap();
    let g = graph(src);
    let found = cycles(&g);
    assert_eq!(found.len(), 1, "{}", report(&found));
    assert_eq!(found[0].0, ["a", "b", "c"]);
    assert_eq!(
        found[0].1,
        ["a -> b (a/mod.rs)", "b -> c (b.rs)", "c -> a (c.rs)"]
    );
    assert!(
        g["d"].contains_key("a") && !g["c"].contains_key("d"),
        "{g:?}"
    );
}

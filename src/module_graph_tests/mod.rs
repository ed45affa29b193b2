//! The structure of `src/` as tests, read from the code ([`graph`]): `cargo test` fails when
//!
//! * a file uses a file that uses it back, directly or through others (an import circle), naming the
//!   files of the circle and the names each takes from the next — the rule holds between files, so it
//!   holds between the top-level modules too;
//! * the module table of `docs/design.md` is not the graph (`LLMPERF_BLESS=1 cargo test --lib
//!   module_graph` writes it);
//! * `unsafe` code lives outside `src/sys/`;
//! * an evalscope file name, or the `parallel_<P>_number_<N>` pattern, is spelled outside
//!   `src/run_folder/layout.rs`.

mod graph;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use graph::{file_graph, FileGraph};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn report(found: &[(Vec<String>, Vec<String>)]) -> String {
    found
        .iter()
        .map(|(group, edges)| format!("circle: {}\n  {}", group.join(" <-> "), edges.join("\n  ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_file_uses_one_that_uses_it_back() {
    let g = file_graph(&src());
    assert!(
        g.edges["plan/load.rs"].contains_key("plan/run_spec.rs"),
        "the graph sees uses between files: {:?}",
        g.edges["plan/load.rs"]
    );
    let found = g.circles();
    assert!(
        found.is_empty(),
        "import circles between files of src/ (move the shared item into a file of its own, below both; \
         see docs/design.md):\n{}",
        report(&found)
    );
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let g = file_graph(&src());
    let modules = g.module_graph();
    assert!(modules["plan"].contains_key("cli"), "{modules:?}");
    let files: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = modules
        .iter()
        .map(|(m, uses)| {
            let edges = uses
                .iter()
                .map(|(to, files)| (to.clone(), files.clone()))
                .collect();
            (m.clone(), edges)
        })
        .collect();
    let as_files = FileGraph {
        edges: files,
        modules: BTreeMap::new(),
    };
    let found = as_files.circles();
    assert!(
        found.is_empty(),
        "import cycles between top-level modules of src/ (move the shared type down to the lower \
         module):\n{}",
        report(&found)
    );
}

/// The module table: one row per top-level module, the modules it uses, leaves first.
fn module_table(g: &FileGraph) -> String {
    let modules = g.module_graph();
    let mut rows: Vec<(&String, Vec<&String>)> = modules
        .iter()
        .map(|(m, uses)| (m, uses.keys().collect()))
        .collect();
    rows.sort_by_key(|(m, uses)| (uses.len(), *m));
    let mut out = String::from("| module | uses |\n| --- | --- |\n");
    for (m, uses) in rows {
        let uses = if uses.is_empty() {
            "—".to_string()
        } else {
            uses.iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("| `{m}` | {uses} |\n"));
    }
    out
}

const TABLE_START: &str =
    "<!-- module table: written by `LLMPERF_BLESS=1 cargo test --lib module_graph` -->\n";
const TABLE_END: &str = "<!-- end of module table -->";

#[test]
fn the_design_docs_module_table_is_the_graph() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find(TABLE_START)
        .expect("docs/design.md has the module table markers")
        + TABLE_START.len();
    let end = start
        + doc[start..]
            .find(TABLE_END)
            .expect("the table's end marker");
    let want = module_table(&file_graph(&src()));
    if doc[start..end] == want {
        return;
    }
    if std::env::var_os("LLMPERF_BLESS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    panic!(
        "docs/design.md's module table is not the graph of src/: run `LLMPERF_BLESS=1 cargo test --lib \
         module_graph` to write it. The graph:\n{want}"
    );
}

/// Whether a file has `unsafe` code (blocks, functions, impls, traits).
fn has_unsafe(text: &str) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_expr_unsafe(&mut self, _: &'ast syn::ExprUnsafe) {
            self.0 = true;
        }
        fn visit_signature(&mut self, s: &'ast syn::Signature) {
            self.0 |= s.unsafety.is_some();
        }
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            self.0 |= i.unsafety.is_some();
            syn::visit::visit_item_impl(self, i);
        }
        fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
            self.0 |= i.unsafety.is_some();
            syn::visit::visit_item_trait(self, i);
        }
    }
    let file = syn::parse_file(text).unwrap();
    let mut finder = Finder(false);
    syn::visit::Visit::visit_file(&mut finder, &file);
    finder.0
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
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

#[test]
fn unsafe_code_lives_in_sys() {
    let src = src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let outside: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(src.join("sys")))
        .filter(|f| has_unsafe(&std::fs::read_to_string(f).unwrap()))
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "unsafe code outside src/sys/ (wrap the call in a safe function there): {outside:?}"
    );
}

/// The file's text without its `#[cfg(test)]` items (brace counting per line); comments are kept.
fn without_test_items(text: &str) -> String {
    let mut kept = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut pending_test = false;
    let mut depth: i64 = 0;
    for line in text.lines() {
        let stripped = line.trim();
        if skip_depth.is_none() && stripped.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if pending_test {
            pending_test = false;
            if stripped.ends_with(';') {
                continue;
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
        kept.push(line);
    }
    kept.join("\n")
}

/// Whether `text` spells a run folder name: `parallel_…_number_…` or `rate_…_number_…` in one word.
fn spells_run_name(text: &str) -> bool {
    text.match_indices("_number_").any(|(i, _)| {
        let word_start = text[..i]
            .rfind(|c: char| c.is_whitespace() || "`\"'(/".contains(c))
            .map_or(0, |j| j + 1);
        let word = &text[word_start..i];
        word.starts_with("parallel_") || word.starts_with("rate_")
    })
}

#[test]
fn evalscope_file_names_are_spelled_in_one_file() {
    const NAMES: [&str; 8] = [
        "benchmark_summary.json",
        "benchmark_percentile.json",
        "benchmark_args.json",
        "benchmark_data.db",
        "performance_summary.txt",
        "workload_throughput.json",
        "workload_timeline.json",
        "speed_benchmark.json",
    ];
    let src = src();
    let product: BTreeSet<String> = file_graph(&src).modules.into_keys().collect();
    let mut found = Vec::new();
    for file in &product {
        if file == "run_folder/layout.rs" {
            continue;
        }
        let text = without_test_items(&std::fs::read_to_string(src.join(file)).unwrap());
        for name in NAMES {
            if text.contains(name) {
                found.push(format!("{file}: {name}"));
            }
        }
        if spells_run_name(&text) {
            found.push(format!(
                "{file}: a parallel_…_number_… / rate_…_number_… folder name"
            ));
        }
    }
    assert!(
        found.is_empty(),
        "evalscope's file names belong to src/run_folder/layout.rs (name the file through RunRoot / \
         RunDir, or in words):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn run_folder_names_are_told_from_other_words() {
    assert!(spells_run_name("dir `parallel_4_number_100`"));
    assert!(spells_run_name("format!(\"rate_{}_number_{n}\")"));
    assert!(spells_run_name("/parallel_<P>_number_<N>/"));
    assert!(!spells_run_name(
        "--sla-number-multiplier sla_number_multiplier"
    ));
    assert!(!spells_run_name("parallel_requests and a_number_of"));
}

/// A crate in a temporary folder, from `(path, text)` pairs.
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn a_circle_between_files_is_found_and_named() {
    let dir = crate_of(&[
        ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod c;\n"),
        (
            "a/mod.rs",
            "mod x;\nmod y;\npub use x::Shared;\n/// crate::b in a comment\npub fn face() {}\n",
        ),
        // x uses y's item, y uses x's type through the face's re-export: a circle.
        (
            "a/x.rs",
            "pub struct Shared;\npub fn run() { super::y::helper() }\n",
        ),
        (
            "a/y.rs",
            "use super::Shared;\npub fn helper() -> Option<Shared> { None }\n",
        ),
        // b uses a (one way) and c only in test code.
        (
            "b.rs",
            "use crate::a;\npub fn f() { a::face(); }\n#[cfg(test)]\nmod t { use crate::c::Z; }\n",
        ),
        ("c.rs", "pub struct Z;\nuse crate::b::f;\n"),
    ]);
    let g = file_graph(dir.path());
    assert!(
        !g.modules.contains_key("c.rs"),
        "test-only files are left out"
    );
    let found = g.circles();
    assert_eq!(found.len(), 1, "{}", report(&found));
    assert_eq!(found[0].0, ["a/x.rs", "a/y.rs"]);
    assert_eq!(
        found[0].1,
        ["a/x.rs -> a/y.rs: helper", "a/y.rs -> a/x.rs: Shared"]
    );
    assert_eq!(
        g.edges["b.rs"].keys().collect::<Vec<_>>(),
        ["a/mod.rs"],
        "b uses the face's own function only"
    );
    assert!(g.module_graph()["b"].contains_key("a"));
}

#[test]
fn names_through_globs_and_aliases_reach_their_files() {
    let dir = crate_of(&[
        ("lib.rs", "pub mod p;\npub mod q;\npub mod r;\n"),
        (
            "p/mod.rs",
            "mod kinds;\nmod load;\npub use kinds::*;\nuse load::helper as h;\npub fn run() { h(); }\n",
        ),
        ("p/kinds.rs", "pub enum Mode { A }\n"),
        ("p/load.rs", "use super::*;\npub fn helper() -> Mode { Mode::A }\n"),
        (
            "q.rs",
            "use crate::p;\nuse crate::p::Mode as M;\npub fn g() -> M { tracing::info!(\"{}\", crate::p::run()); p::Mode::A }\n",
        ),
        ("r.rs", "pub fn h() { crate::q::g(); }\n"),
    ]);
    let g = file_graph(dir.path());
    let targets = |f: &str| g.edges[f].keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        targets("p/load.rs"),
        ["p/kinds.rs"],
        "a name through super::*"
    );
    assert!(
        targets("p/mod.rs").is_empty(),
        "a face and its own files are one namespace"
    );
    assert_eq!(
        targets("q.rs"),
        ["p/kinds.rs", "p/mod.rs"],
        "re-exports, aliases, macros"
    );
    assert_eq!(targets("r.rs"), ["q.rs"]);
    assert!(g.circles().is_empty(), "{}", report(&g.circles()));
}

#[test]
fn the_ownership_table_lists_every_module() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find("## What each module owns")
        .expect("docs/design.md has the ownership table");
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut listed = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split('|').nth(1).unwrap_or("");
        for entry in first.split('`').skip(1).step_by(2) {
            let name = entry.trim_end_matches('/').trim_end_matches(".rs");
            if !matches!(name, "main" | "lib") {
                listed.insert(name.to_string());
            }
        }
    }
    let g = file_graph(&src());
    let modules: BTreeSet<String> = g
        .modules
        .keys()
        .map(|f| g.top_module(f))
        .filter(|m| m != "lib")
        .collect();
    assert_eq!(
        listed, modules,
        "docs/design.md's ownership table must have one row (or one entry) per top-level module of src/"
    );
}

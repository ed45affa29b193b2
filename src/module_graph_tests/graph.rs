//! The import graph of `src/`, read from the code with `syn`: which file uses a name defined in which
//! other file. Product code only: files declared under `#[cfg(test)]` (and their folders), items under
//! `#[cfg(test)]`, `main.rs` and comments (doc links included) are left out.
//!
//! A file uses a file when a path in it (a `use` tree, an expression, a type, a pattern, a macro's
//! tokens) starting at `crate::`, `super::`, `self::`, a child module or a name it imported, names an
//! item defined in that file, or that file's module. A name a module re-exports (`pub use x::Y`, or
//! `pub use x::*`) is followed to the file that defines it.
//!
//! A module's own file (`lib.rs`, `x/mod.rs`, or `x.rs` beside a folder `x/`) is its face and namespace:
//! its re-exports hand names on and are not uses, and uses between it and the files of its submodules
//! are not edges (the module's main type lives in it, its children implement parts of it and it
//! dispatches to them). Between siblings, and between files of unrelated modules, every use is an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module path from the crate root (`[]` is `lib.rs`).
pub type ModPath = Vec<String>;

/// What one file defines and uses.
#[derive(Debug, Default)]
struct Facts {
    /// Its module.
    module: ModPath,
    /// Names of the items it defines.
    defined: BTreeSet<String>,
    /// Child modules it declares (`mod x;`, not under `#[cfg(test)]`).
    children: BTreeSet<String>,
    /// Names it re-exports: `pub use p::X as Y` → (Y, p::X); a glob → ("*", p).
    reexports: Vec<(String, Vec<String>)>,
    /// Names it imports (any visibility), to their raw paths.
    aliases: BTreeMap<String, Vec<String>>,
    /// Modules it imports every name of (`use p::*`, not re-exported).
    globs: Vec<Vec<String>>,
    /// Every path it uses, raw (first segment unresolved).
    uses: Vec<Vec<String>>,
}

/// The import graph of a crate's files, paths relative to `src`.
#[derive(Debug, Default)]
pub struct FileGraph {
    /// File → file it uses → the names it takes from it.
    pub edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Every product file, with its module.
    pub modules: BTreeMap<String, ModPath>,
}

fn has_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().replace(' ', "") == "test")
    })
}

fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let alias = prefix.last().cloned().unwrap_or_default();
                out.push((alias, prefix.clone()));
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((name, path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => out.push(("*".into(), prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Collects the paths a file's code uses (skipping `#[cfg(test)]` items).
struct PathCollector<'a> {
    uses: &'a mut Vec<Vec<String>>,
}

impl PathCollector<'_> {
    /// Paths inside a macro's tokens: runs of `ident :: ident …`.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        let flush = |run: &mut Vec<String>, uses: &mut Vec<Vec<String>>| {
            if run.len() > 1 {
                uses.push(std::mem::take(run));
            }
            run.clear();
        };
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    if colons != 2 {
                        flush(&mut run, self.uses);
                    }
                    run.push(i.to_string());
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => {
                    colons += 1;
                }
                proc_macro2::TokenTree::Group(g) => {
                    flush(&mut run, self.uses);
                    colons = 0;
                    self.tokens(g.stream());
                }
                _ => {
                    flush(&mut run, self.uses);
                    colons = 0;
                }
            }
        }
        flush(&mut run, self.uses);
    }
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.uses
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }

    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !item_is_test(i) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let test = match i {
            syn::ImplItem::Fn(f) => has_cfg_test(&f.attrs),
            syn::ImplItem::Const(c) => has_cfg_test(&c.attrs),
            _ => false,
        };
        if !test {
            syn::visit::visit_impl_item(self, i);
        }
    }

    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {
        // Read as aliases, not as paths.
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Doc comments and attributes name no item used by the code.
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(crate)`, `pub(super)`: a scope, not a use.
    }
}

fn item_attrs(i: &syn::Item) -> &[syn::Attribute] {
    match i {
        syn::Item::Const(x) => &x.attrs,
        syn::Item::Enum(x) => &x.attrs,
        syn::Item::ExternCrate(x) => &x.attrs,
        syn::Item::Fn(x) => &x.attrs,
        syn::Item::ForeignMod(x) => &x.attrs,
        syn::Item::Impl(x) => &x.attrs,
        syn::Item::Macro(x) => &x.attrs,
        syn::Item::Mod(x) => &x.attrs,
        syn::Item::Static(x) => &x.attrs,
        syn::Item::Struct(x) => &x.attrs,
        syn::Item::Trait(x) => &x.attrs,
        syn::Item::TraitAlias(x) => &x.attrs,
        syn::Item::Type(x) => &x.attrs,
        syn::Item::Union(x) => &x.attrs,
        syn::Item::Use(x) => &x.attrs,
        _ => &[],
    }
}

fn item_is_test(i: &syn::Item) -> bool {
    has_cfg_test(item_attrs(i))
}

/// A folder's face, whose public `use`s re-export: `lib.rs` or a `mod.rs`.
fn is_face(file: &str) -> bool {
    file == "lib.rs" || file.ends_with("mod.rs")
}

fn read_items(items: &[syn::Item], facts: &mut Facts, file: &str) {
    for item in items.iter().filter(|i| !item_is_test(i)) {
        let name = match item {
            syn::Item::Const(x) => Some(x.ident.to_string()),
            syn::Item::Enum(x) => Some(x.ident.to_string()),
            syn::Item::Fn(x) => Some(x.sig.ident.to_string()),
            syn::Item::Macro(x) => x.ident.as_ref().map(|i| i.to_string()),
            syn::Item::Static(x) => Some(x.ident.to_string()),
            syn::Item::Struct(x) => Some(x.ident.to_string()),
            syn::Item::Trait(x) => Some(x.ident.to_string()),
            syn::Item::TraitAlias(x) => Some(x.ident.to_string()),
            syn::Item::Type(x) => Some(x.ident.to_string()),
            syn::Item::Union(x) => Some(x.ident.to_string()),
            syn::Item::Mod(m) if m.content.is_none() => {
                facts.children.insert(m.ident.to_string());
                None
            }
            syn::Item::Mod(m) => {
                // An inline module: its items count as this file's.
                if let Some((_, items)) = &m.content {
                    read_items(items, facts, file);
                }
                Some(m.ident.to_string())
            }
            syn::Item::Use(u) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                let public = !matches!(u.vis, syn::Visibility::Inherited);
                for (alias, path) in leaves {
                    if public {
                        facts.reexports.push((alias.clone(), path.clone()));
                    }
                    if public && is_face(file) {
                        continue;
                    }
                    match alias.as_str() {
                        // The names a glob brings in are resolved where they are used.
                        "*" => facts.globs.push(path),
                        "_" => facts.uses.push(path),
                        _ => {
                            facts.aliases.insert(alias, path.clone());
                            facts.uses.push(path);
                        }
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(n) = name {
            facts.defined.insert(n);
        }
    }
}

fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
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

/// Reads every product file under `src`.
fn read_crate(src: &Path) -> BTreeMap<String, Facts> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut all: BTreeMap<String, Facts> = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(src).unwrap().to_path_buf();
        let shown = rel.to_string_lossy().replace('\\', "/");
        if shown == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{shown}: {e}"));
        let mut facts = Facts {
            module: module_of(&rel),
            ..Facts::default()
        };
        read_items(&parsed.items, &mut facts, &shown);
        let mut collector = PathCollector {
            uses: &mut facts.uses,
        };
        for item in &parsed.items {
            collector.visit_item(item);
        }
        all.insert(shown, facts);
    }
    // Keep only the files reachable from lib.rs through declarations outside #[cfg(test)].
    let by_module: BTreeMap<ModPath, String> = all
        .iter()
        .map(|(f, facts)| (facts.module.clone(), f.clone()))
        .collect();
    let mut keep = BTreeSet::new();
    let mut stack = vec![Vec::<String>::new()];
    while let Some(m) = stack.pop() {
        let Some(file) = by_module.get(&m) else {
            continue;
        };
        if !keep.insert(file.clone()) {
            continue;
        }
        for child in &all[file].children {
            let mut c = m.clone();
            c.push(child.clone());
            stack.push(c);
        }
    }
    all.retain(|f, _| keep.contains(f));
    all
}

/// Resolving raw paths to the files that define what they name.
struct Resolver<'a> {
    files: &'a BTreeMap<String, Facts>,
    by_module: BTreeMap<ModPath, &'a str>,
}

impl<'a> Resolver<'a> {
    fn facts_of(&self, m: &ModPath) -> Option<&'a Facts> {
        self.by_module.get(m).map(|f| &self.files[*f])
    }

    fn has_module(&self, m: &ModPath) -> bool {
        self.by_module.contains_key(m)
    }

    /// The file that defines `name` in module `m` (following re-exports), or the module's own file.
    fn item_file(&self, m: &ModPath, name: &str, depth: usize) -> Option<&'a str> {
        self.find_item(m, name, false, depth)
            .or_else(|| self.by_module.get(m).copied())
    }

    /// The file that defines `name` in module `m`, following its re-exports (and, for a glob import by
    /// a child, `imports`: its private imports too); `None` when `m` does not name it.
    fn find_item(&self, m: &ModPath, name: &str, imports: bool, depth: usize) -> Option<&'a str> {
        let file = *self.by_module.get(m)?;
        let facts = &self.files[file];
        if facts.defined.contains(name) {
            return Some(file);
        }
        if depth > 16 {
            return None;
        }
        for (alias, path) in &facts.reexports {
            if alias == name {
                if let Some(f) = self.resolve(m, path, depth + 1) {
                    return Some(f);
                }
            }
        }
        if imports {
            if let Some(path) = facts.aliases.get(name) {
                return self.resolve(m, path, depth + 1);
            }
        }
        let private = facts.globs.iter().filter(|_| imports);
        facts
            .reexports
            .iter()
            .filter(|(alias, _)| alias == "*")
            .map(|(_, path)| path)
            .chain(private)
            .filter_map(|path| self.module_path(m, path, depth + 1))
            .find_map(|target| self.find_item(&target, name, imports, depth + 1))
    }

    /// The module a path from `cur` names, when it names one.
    fn module_path(&self, cur: &ModPath, path: &[String], depth: usize) -> Option<ModPath> {
        let (mut m, rest) = self.start(cur, path, depth)?;
        for seg in rest {
            let mut next = m.clone();
            next.push(seg.clone());
            if !self.has_module(&next) {
                return None;
            }
            m = next;
        }
        Some(m)
    }

    /// Where a path from module `cur` starts: the module its first segments name, and the rest.
    fn start<'p>(
        &self,
        cur: &ModPath,
        path: &'p [String],
        depth: usize,
    ) -> Option<(ModPath, &'p [String])> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some((Vec::new(), &path[1..])),
            "self" => Some((cur.clone(), &path[1..])),
            "super" => {
                let mut m = cur.clone();
                let mut i = 0;
                while path.get(i).is_some_and(|s| s == "super") {
                    m.pop();
                    i += 1;
                }
                Some((m, &path[i..]))
            }
            _ => {
                let facts = self.facts_of(cur)?;
                if facts.children.contains(first) {
                    return Some((cur.clone(), path));
                }
                let alias = facts.aliases.get(first)?;
                if depth > 16 {
                    return None;
                }
                let target = self.module_path(cur, alias, depth + 1)?;
                Some((target, &path[1..]))
            }
        }
    }

    /// The file a path used in module `cur` names, `None` when it leaves the crate or names nothing in it.
    fn resolve(&self, cur: &ModPath, path: &[String], depth: usize) -> Option<&'a str> {
        if depth > 16 {
            return None;
        }
        let first = path.first()?;
        let facts = self.facts_of(cur)?;
        if !matches!(first.as_str(), "crate" | "self" | "super") && !facts.children.contains(first)
        {
            let Some(alias) = facts.aliases.get(first) else {
                // A name a glob import brought in, if one did.
                return facts
                    .globs
                    .iter()
                    .filter_map(|g| self.module_path(cur, g, depth + 1))
                    .find_map(|m| self.find_item(&m, first, true, depth + 1));
            };
            // An imported item used by its alias: resolve the import.
            if self.module_path(cur, alias, depth + 1).is_none() {
                return self.resolve(cur, alias, depth + 1);
            }
        }
        let (mut m, rest) = self.start(cur, path, depth)?;
        for seg in rest {
            let mut next = m.clone();
            next.push(seg.clone());
            if self.has_module(&next) {
                m = next;
            } else {
                return self.item_file(&m, seg, depth + 1);
            }
        }
        self.by_module.get(&m).copied()
    }
}

/// Whether module `a` is an ancestor of module `b`, or `b` of `a`.
fn within_face(a: &ModPath, b: &ModPath) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() < long.len() && long.starts_with(short)
}

/// The file graph of the crate under `src`.
pub fn file_graph(src: &Path) -> FileGraph {
    let files = read_crate(src);
    let resolver = Resolver {
        files: &files,
        by_module: files
            .iter()
            .map(|(f, facts)| (facts.module.clone(), f.as_str()))
            .collect(),
    };
    let mut graph = FileGraph::default();
    for (file, facts) in &files {
        graph.modules.insert(file.clone(), facts.module.clone());
        let edges = graph.edges.entry(file.clone()).or_default();
        for path in &facts.uses {
            if let Some(target) = resolver.resolve(&facts.module, path, 0) {
                if target != file && !within_face(&facts.module, &files[target].module) {
                    let name = path.last().cloned().unwrap_or_default();
                    edges.entry(target.to_string()).or_default().insert(name);
                }
            }
        }
    }
    graph
}

impl FileGraph {
    /// Groups of files that reach each other (strongly connected, more than one file), each with the
    /// edges inside it: `a.rs -> b.rs: X, Y`.
    pub fn circles(&self) -> Vec<(Vec<String>, Vec<String>)> {
        let reach = |from: &String| {
            let mut seen = BTreeSet::from([from.clone()]);
            let mut stack = vec![from.clone()];
            while let Some(f) = stack.pop() {
                for to in self.edges.get(&f).into_iter().flat_map(|e| e.keys()) {
                    if seen.insert(to.clone()) {
                        stack.push(to.clone());
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&String, BTreeSet<String>> =
            self.edges.keys().map(|f| (f, reach(f))).collect();
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for f in self.edges.keys() {
            if done.contains(f) {
                continue;
            }
            let group: Vec<String> = reaches[f]
                .iter()
                .filter(|o| reaches.get(o).is_some_and(|r| r.contains(f)))
                .cloned()
                .collect();
            done.extend(group.iter().cloned());
            if group.len() < 2 {
                continue;
            }
            let edges = group
                .iter()
                .flat_map(|a| {
                    self.edges[a].iter().filter(|(b, _)| group.contains(b)).map(
                        move |(b, names)| {
                            let names: Vec<&str> = names.iter().map(String::as_str).collect();
                            format!("{a} -> {b}: {}", names.join(", "))
                        },
                    )
                })
                .collect();
            found.push((group, edges));
        }
        found
    }

    /// The top-level module of `file` (`lib` for the crate root).
    pub fn top_module(&self, file: &str) -> String {
        self.modules
            .get(file)
            .and_then(|m| m.first().cloned())
            .unwrap_or_else(|| "lib".to_string())
    }

    /// Top-level module → the top-level modules it uses → the files that make each edge.
    pub fn module_graph(&self) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
        let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (file, edges) in &self.edges {
            let from = self.top_module(file);
            if from == "lib" {
                continue;
            }
            let uses = g.entry(from.clone()).or_default();
            for to in edges.keys() {
                let to_module = self.top_module(to);
                if to_module != from && to_module != "lib" {
                    uses.entry(to_module).or_default().insert(file.clone());
                }
            }
        }
        g
    }
}

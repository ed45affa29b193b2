//! `tests/fixtures/documented_commands.txt`: its entries (where a command is documented, the command, its
//! scale-downs and the run folders it must write), and a command line's words as a POSIX shell splits them.

use std::collections::BTreeMap;

/// One documented command.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The fixture line of its `@` line.
    pub line: usize,
    /// Where it is documented (`en/…/examples.md:12 zh/…`).
    pub pages: String,
    /// The command as documented.
    pub command: String,
    /// Its scale-downs.
    pub scales: Vec<Scale>,
    /// What it must write.
    pub expects: Vec<Expect>,
    /// Why it is not run.
    pub skip: Option<String>,
}

/// `~ FLAG VALUE…` (or `~+` for a flag the command leaves at its default; `~ NAME=VALUE` for a recipe
/// script's setting).
#[derive(Debug, Clone)]
pub struct Scale {
    /// `--number`, or a script setting's name.
    pub flag: String,
    /// The new values.
    pub values: Vec<String>,
    /// `~+`: the flag is added.
    pub added: bool,
}

/// `= …`.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// `ROOT/RUN N`: a run folder with `Total Requests` N.
    Run { path: String, total: u64 },
    /// `ROOT/RUN conversations=N`: a multi-turn run of N conversations.
    Conversations { path: String, conversations: u64 },
    /// `ROOT sla`: SLA auto-tune probe runs under `ROOT/sla_tuning`.
    Sla { root: String },
    /// `help`.
    Help,
}

/// The flags a scale-down may change.
pub const SCALABLE: [&str; 4] = ["--number", "--duration", "--rate", "--sla-upper-bound"];

/// The recipe-script settings a scale-down may change (their `--number` values).
pub const SCALABLE_SETTINGS: [&str; 2] = ["NUMBER", "NUMBERS"];

/// Every entry of the fixture, in order.
pub fn entries() -> Vec<Entry> {
    let text = include_str!("../../fixtures/documented_commands.txt");
    let mut entries: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(pages) = line.strip_prefix("@ ") {
            entries.push(Entry {
                line: i + 1,
                pages: pages.to_string(),
                command: String::new(),
                scales: Vec::new(),
                expects: Vec::new(),
                skip: None,
            });
            continue;
        }
        let e = entries
            .last_mut()
            .unwrap_or_else(|| panic!("fixture line {}: no `@` line before it", i + 1));
        if let Some(cmd) = line.strip_prefix("$ ") {
            e.command = cmd.to_string();
        } else if let Some(more) = raw.strip_prefix("| ") {
            e.command.push('\n');
            e.command.push_str(more);
        } else if let Some(rest) = line.strip_prefix("~+ ") {
            e.scales.push(scale(rest, true));
        } else if let Some(rest) = line.strip_prefix("~ ") {
            e.scales.push(scale(rest, false));
        } else if let Some(rest) = line.strip_prefix("= ") {
            e.expects.push(expect(rest, i + 1));
        } else if let Some(why) = line.strip_prefix("skip ") {
            e.skip = Some(why.to_string());
        } else {
            panic!("fixture line {}: not an entry line: {line:?}", i + 1);
        }
    }
    for e in &entries {
        assert!(
            !e.command.is_empty(),
            "fixture line {}: no `$` line",
            e.line
        );
        assert!(
            e.skip.is_some() == e.expects.is_empty(),
            "fixture line {}: an entry is skipped or expects run folders, not both or neither",
            e.line
        );
    }
    entries
}

fn scale(rest: &str, added: bool) -> Scale {
    let rest = rest.split(" # ").next().unwrap_or(rest);
    if let Some((name, values)) = rest.split_once('=') {
        if !name.starts_with('-') {
            return Scale {
                flag: name.to_string(),
                values: vec![values.to_string()],
                added,
            };
        }
    }
    let mut words = rest.split_whitespace().map(str::to_string);
    let flag = words.next().expect("~ FLAG VALUE…");
    Scale {
        flag,
        values: words.collect(),
        added,
    }
}

fn expect(rest: &str, line: usize) -> Expect {
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        ["help"] => Expect::Help,
        [root, "sla"] => Expect::Sla {
            root: root.to_string(),
        },
        [path, n] => match n.strip_prefix("conversations=") {
            Some(c) => Expect::Conversations {
                path: path.to_string(),
                conversations: c.parse().expect("conversations=N"),
            },
            None => Expect::Run {
                path: path.to_string(),
                total: n
                    .parse()
                    .unwrap_or_else(|_| panic!("line {line}: = ROOT/RUN N")),
            },
        },
        _ => panic!("fixture line {line}: not an expectation: {rest:?}"),
    }
}

/// The words of `line` as a POSIX shell splits them: white space separates; `'…'` is literal; `"…"` is
/// literal but for `$NAME` / `${NAME}`, which (also unquoted) become `vars[NAME]`; a word starting with
/// `#` begins a comment. A variable not in `vars` is an error (a new placeholder to fill in).
pub fn words(line: &str, vars: &BTreeMap<&str, String>) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for ch in chars.by_ref() {
                    if ch == '\'' {
                        break;
                    }
                    w.push(ch);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(ch) = chars.next() {
                    match ch {
                        '"' => break,
                        '$' => w.push_str(&variable(&mut chars, vars)),
                        ch => w.push(ch),
                    }
                }
            }
            '$' => {
                let value = variable(&mut chars, vars);
                word.get_or_insert_with(String::new).push_str(&value);
            }
            '#' if word.is_none() => break,
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

fn variable(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    vars: &BTreeMap<&str, String>,
) -> String {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&ch) = chars.peek() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            name.push(ch);
            chars.next();
        } else {
            break;
        }
    }
    if braced {
        assert_eq!(chars.next(), Some('}'), "${{{name}: no closing brace");
    }
    vars.get(name.as_str())
        .unwrap_or_else(|| panic!("${name}: a placeholder with no value in the test"))
        .clone()
}

#[test]
fn words_split_as_a_shell_does() {
    let vars = BTreeMap::from([("KEY", "k1".to_string())]);
    assert_eq!(
        words(
            r#"A=1 evalscope perf --x 'a "b"' --k ${KEY} "$KEY-2" --j '{
  "n": 1}' --y "s p"  # a comment"#,
            &vars
        ),
        [
            "A=1",
            "evalscope",
            "perf",
            "--x",
            "a \"b\"",
            "--k",
            "k1",
            "k1-2",
            "--j",
            "{\n  \"n\": 1}",
            "--y",
            "s p"
        ]
    );
}

//! The AgentX trace file (`traces.jsonl` of the `cc-traces-weka-062126` data sets, the Weka KV-cache tester
//! format AIPerf reads): one recorded coding-agent session per line. A session has an `id`, its `models`,
//! the cache `block_size` its `hash_ids` count in, a `hash_id_scope` (`local`: ids are the session's own;
//! `global`: equal ids in different sessions are the same block), optional `tool_tokens`/`system_tokens`
//! and `totals`, and `requests`: model calls (`type` `n` or `s`, streaming) with `t` (seconds from the
//! session start), `in`/`out` token counts, `hash_ids`, `api_time`, `think_time`, `stop`, …, interleaved with
//! `subagent` markers that hold a sub-agent's own `requests` (nested), its `agent_id`, `status`
//! (`async_launched` ones are not waited for) and `duration_ms`.
//!
//! Every line is checked: an unknown key, a wrong type, a negative time or an empty session is an error
//! naming the file and the line.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;

use super::error::ScenarioError;

/// One model call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// Seconds from the session start.
    pub t: f64,
    /// The model.
    pub model: String,
    /// Prompt tokens.
    #[serde(rename = "in")]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(rename = "out")]
    pub output_tokens: u64,
    /// Cache block ids of the prompt, `block_size` tokens each.
    #[serde(default)]
    pub hash_ids: Vec<u64>,
    /// Content types of the input (recorded).
    #[serde(default)]
    pub input_types: Vec<String>,
    /// Content types of the output (recorded).
    #[serde(default)]
    pub output_types: Vec<String>,
    /// Stop reason (recorded).
    #[serde(default)]
    pub stop: String,
    /// Server time of the call, seconds.
    #[serde(default)]
    pub api_time: Option<f64>,
    /// Client delay before the call, seconds (recorded).
    #[serde(default)]
    pub think_time: Option<f64>,
    /// Recorded time to first token (streaming calls).
    #[serde(default)]
    pub ttft: Option<f64>,
}

/// A sub-agent and its calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subagent {
    /// Spawn time, seconds from the session start.
    pub t: f64,
    /// Unique within the session.
    pub agent_id: String,
    /// E.g. `Explore` (recorded).
    pub subagent_type: String,
    /// Its wall-clock duration (absent for `async_launched`).
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Recorded.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// Recorded.
    #[serde(default)]
    pub tool_use_count: Option<u64>,
    /// `completed`, `async_launched`, …
    pub status: String,
    /// Its own calls and sub-agents.
    pub requests: Vec<Entry>,
    /// Recorded.
    pub models: Vec<String>,
    /// Recorded.
    #[serde(default)]
    pub tool_tokens: u64,
    /// Recorded.
    #[serde(default)]
    pub system_tokens: u64,
}

impl Subagent {
    /// Launched without the parent waiting for it.
    pub fn is_async(&self) -> bool {
        self.status == "async_launched"
    }
}

/// An entry of a `requests` list.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum Entry {
    /// `type: "n"`.
    #[serde(rename = "n")]
    Normal(Call),
    /// `type: "s"`.
    #[serde(rename = "s")]
    Streaming(Call),
    /// `type: "subagent"`.
    #[serde(rename = "subagent")]
    Subagent(Subagent),
}

/// One recorded session (a line of `traces.jsonl`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Session id.
    pub id: String,
    /// Models used.
    pub models: Vec<String>,
    /// Tokens per hash id.
    pub block_size: u64,
    /// `local` or `global`.
    pub hash_id_scope: String,
    /// Recorded.
    #[serde(default)]
    pub tool_tokens: u64,
    /// Recorded.
    #[serde(default)]
    pub system_tokens: u64,
    /// Calls and sub-agents, in recorded order.
    pub requests: Vec<Entry>,
    /// Recorded totals (opaque).
    #[serde(default)]
    pub totals: Option<serde_json::Value>,
}

impl Session {
    /// Hash ids name blocks shared by every session.
    pub fn global_hashes(&self) -> bool {
        self.hash_id_scope == "global"
    }
}

fn check_time(what: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ScenarioError::BadSession(format!(
            "{what} must be a finite number >= 0, got {v}"
        )))
    }
}

/// Checks what serde cannot: times, ids, scope, block size; returns the session's call count.
fn check_entries(entries: &[Entry], scopes: &mut HashSet<String>) -> Result<usize, ScenarioError> {
    let mut calls = 0;
    for e in entries {
        match e {
            Entry::Normal(c) | Entry::Streaming(c) => {
                check_time("t", c.t)?;
                if let Some(a) = c.api_time {
                    check_time("api_time", a)?;
                }
                if let Some(a) = c.think_time {
                    check_time("think_time", a)?;
                }
                if let Some(&h) = c.hash_ids.iter().find(|&&h| h >= 1 << 32) {
                    return Err(ScenarioError::BadSession(format!(
                        "hash id {h} is beyond 2^32"
                    )));
                }
                calls += 1;
            }
            Entry::Subagent(s) => {
                check_time("t", s.t)?;
                if s.agent_id.is_empty() || !scopes.insert(s.agent_id.clone()) {
                    return Err(ScenarioError::BadSession(format!(
                        "agent_id {:?} must be non-empty and unique within the session and distinct from its id",
                        s.agent_id
                    )));
                }
                calls += check_entries(&s.requests, scopes)?;
            }
        }
    }
    Ok(calls)
}

/// Parses and checks one line.
pub fn parse_line(line: &str) -> Result<Session, ScenarioError> {
    let bad = ScenarioError::BadSession;
    let s: Session = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
    if s.block_size == 0 {
        return Err(bad("block_size must be greater than zero".into()));
    }
    if !matches!(s.hash_id_scope.as_str(), "local" | "global") {
        return Err(bad(format!(
            "hash_id_scope must be \"local\" or \"global\", got {:?}",
            s.hash_id_scope
        )));
    }
    let mut scopes = HashSet::from([s.id.clone()]);
    if check_entries(&s.requests, &mut scopes)? == 0 {
        return Err(bad(format!("session {:?} has no model call", s.id)));
    }
    Ok(s)
}

/// Reads every session of `path`; a bad line is an error naming the file and the line.
pub fn load(path: &Path) -> Result<Vec<Session>, ScenarioError> {
    let io = |action, reason| ScenarioError::TraceIo {
        path: path.to_path_buf(),
        action,
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
    let mut sessions = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io("read", e))?;
        if line.trim().is_empty() {
            continue;
        }
        let session = parse_line(&line).map_err(|e| ScenarioError::TraceLine {
            path: path.to_path_buf(),
            line: i + 1,
            reason: Box::new(e),
        })?;
        sessions.push(session);
    }
    if sessions.is_empty() {
        return Err(ScenarioError::NoSession {
            path: path.to_path_buf(),
        });
    }
    Ok(sessions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_checked() {
        let good = r#"{"id":"s1","models":["m"],"block_size":4,"hash_id_scope":"local","requests":[{"type":"n","t":0,"model":"m","in":8,"out":2,"hash_ids":[1,2]},{"type":"subagent","t":1,"agent_id":"a1","subagent_type":"Explore","status":"completed","duration_ms":500,"models":["m"],"requests":[{"type":"s","t":1.1,"model":"m","in":4,"out":1,"ttft":0.1}]}]}"#;
        let s = parse_line(good).unwrap();
        assert_eq!(s.requests.len(), 2);
        assert!(parse_line(
            &good
                .replace("\"stop\"", "\"x\"")
                .replace("\"out\":2", "\"out\":2,\"extra\":1")
        )
        .unwrap_err()
        .to_string()
        .contains("extra"));
        assert!(parse_line(&good.replace("\"local\"", "\"shared\"")).is_err());
        assert!(parse_line(&good.replace("\"agent_id\":\"a1\"", "\"agent_id\":\"s1\"")).is_err());
        assert!(parse_line(&good.replace("\"t\":1.1", "\"t\":-1")).is_err());
    }
}

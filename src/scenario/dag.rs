//! A recorded session as a dependency graph of model calls, each with the pause that preceded it.
//!
//! The rules (llmperf's reading of the trace's timing facts):
//! * Within one agent's list, a call waits for the call before it to finish, then for the recorded gap
//!   between that call's end (`t + api_time`) and its own `t`: the tool-call and client latency.
//! * A `subagent` marker spawns its calls off the call before it (the spawner): the sub-agent's first call
//!   waits for the spawner to finish, then for its own recorded gap. Markers side by side run concurrently.
//! * The parent's next call also waits for every sub-agent spawned since its previous call (all of their
//!   calls, nested ones included), unless a sub-agent was `async_launched`; its gap is measured from the
//!   latest recorded end among them (`t + duration_ms`).
//! * A call with nothing to wait for starts `t` after the session starts.
//!
//! Hash ids are put into one space for the whole replay: a `local` session's ids are its own, a `global`
//! session's are shared with every other `global` session.

use super::weka::{Entry, Session};

/// One model call of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// `<agent>:<turn>`: the agent's id (the session id for the main agent) and the call's index in it.
    pub name: String,
    /// Calls (indices in the session) that must have finished first.
    pub deps: Vec<u32>,
    /// Pause after the last of `deps` finished (after the session start when `deps` is empty), seconds.
    pub delay_s: f64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Block ids of the prompt, in the replay's one space.
    pub hash_ids: Vec<u64>,
}

/// A session ready to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// The session id.
    pub id: String,
    /// Tokens per hash id.
    pub block_size: u64,
    /// Its calls, in recorded order.
    pub nodes: Vec<Node>,
}

/// What the next call waits for, and when that recorded ended.
#[derive(Clone, Default)]
struct Wait {
    nodes: Vec<u32>,
    end_s: f64,
}

impl Wait {
    fn join(&mut self, nodes: &[u32], end_s: f64) {
        self.nodes.extend_from_slice(nodes);
        self.end_s = self.end_s.max(end_s);
    }
}

struct Walker {
    nodes: Vec<Node>,
    hash_base: u64,
}

impl Walker {
    /// Adds the calls of `entries` (agent `scope`) after `spawned_by`; returns the calls a waiting parent
    /// must await (async sub-agents left out) and their latest recorded end.
    fn walk(&mut self, entries: &[Entry], scope: &str, spawned_by: &Wait) -> (Vec<u32>, f64) {
        let mut spawn = spawned_by.clone();
        let mut join = Wait::default();
        let mut awaited = Vec::new();
        let mut end_s = spawned_by.end_s;
        let mut turn = 0;
        for entry in entries {
            match entry {
                Entry::Normal(call) | Entry::Streaming(call) => {
                    let mut deps = spawn.nodes.clone();
                    deps.extend_from_slice(&join.nodes);
                    deps.sort_unstable();
                    deps.dedup();
                    let wait_end = if deps.is_empty() {
                        0.0
                    } else {
                        spawn.end_s.max(join.end_s)
                    };
                    let index = self.nodes.len() as u32;
                    self.nodes.push(Node {
                        name: format!("{scope}:{turn}"),
                        deps,
                        delay_s: (call.t - wait_end).max(0.0),
                        input_tokens: call.input_tokens,
                        output_tokens: call.output_tokens,
                        hash_ids: call.hash_ids.iter().map(|h| self.hash_base | h).collect(),
                    });
                    turn += 1;
                    let call_end = call.t + call.api_time.unwrap_or(0.0);
                    spawn = Wait {
                        nodes: vec![index],
                        end_s: call_end,
                    };
                    join = Wait::default();
                    awaited.push(index);
                    end_s = end_s.max(call_end);
                }
                Entry::Subagent(sub) => {
                    let (sub_nodes, sub_end) = self.walk(&sub.requests, &sub.agent_id, &spawn);
                    if sub.is_async() {
                        continue;
                    }
                    let recorded_end = sub
                        .duration_ms
                        .map(|ms| sub.t + ms as f64 / 1000.0)
                        .unwrap_or(sub_end);
                    join.join(&sub_nodes, recorded_end);
                    awaited.extend_from_slice(&sub_nodes);
                    end_s = end_s.max(recorded_end);
                }
            }
        }
        (awaited, end_s)
    }
}

/// The graph of `session`, the `index`-th of the replay (it names the session's own hash-id space).
pub fn build(session: &Session, index: usize) -> Graph {
    let hash_base = if session.global_hashes() {
        0
    } else {
        (index as u64 + 1) << 32
    };
    let mut walker = Walker {
        nodes: Vec::new(),
        hash_base,
    };
    walker.walk(&session.requests, &session.id, &Wait::default());
    Graph {
        id: session.id.clone(),
        block_size: session.block_size,
        nodes: walker.nodes,
    }
}

impl Graph {
    /// The largest prompt plus output of any call.
    pub fn max_context(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| n.input_tokens + n.output_tokens)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::weka::parse_line;
    use super::*;

    #[test]
    fn chains_branches_and_joins() {
        // main:0 at 0 (ends 1.0) → two sub-agents side by side (a: two calls, b async) → main:1 after a.
        let line = r#"{"id":"s","models":["m"],"block_size":4,"hash_id_scope":"local","requests":[
            {"type":"n","t":0.5,"model":"m","in":8,"out":2,"hash_ids":[1,2],"api_time":0.5},
            {"type":"subagent","t":1.0,"agent_id":"a","subagent_type":"Explore","status":"completed","duration_ms":1500,"models":["m"],"requests":[
                {"type":"s","t":1.2,"model":"m","in":4,"out":1,"api_time":0.3},
                {"type":"s","t":1.7,"model":"m","in":4,"out":1,"api_time":0.2}]},
            {"type":"subagent","t":1.0,"agent_id":"b","subagent_type":"Explore","status":"async_launched","models":["m"],"requests":[
                {"type":"n","t":1.1,"model":"m","in":4,"out":1}]},
            {"type":"n","t":3.0,"model":"m","in":12,"out":2,"hash_ids":[1,2,3],"api_time":1}]}"#
            .replace('\n', "");
        let g = build(&parse_line(&line).unwrap(), 0);
        let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["s:0", "a:0", "a:1", "b:0", "s:1"]);
        let deps: Vec<&[u32]> = g.nodes.iter().map(|n| n.deps.as_slice()).collect();
        assert_eq!(deps, [&[][..], &[0], &[1], &[0], &[0, 1, 2]]);
        let delays: Vec<f64> = g
            .nodes
            .iter()
            .map(|n| (n.delay_s * 1e6).round() / 1e6)
            .collect();
        // s:0 from the start; a:0 1.2−1.0; a:1 1.7−1.5; b:0 1.1−1.0; s:1 3.0−(1.0+1.5).
        assert_eq!(delays, [0.5, 0.2, 0.2, 0.1, 0.5]);
        assert_eq!(
            g.nodes[4].hash_ids,
            [(1 << 32) | 1, (1 << 32) | 2, (1 << 32) | 3]
        );
    }
}

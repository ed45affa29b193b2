//! Tool-calling and structured-output accounting: for each successful request that offered tools or
//! asked for JSON, the calls it got (reassembled from the stream's fragments), whether each call's
//! arguments parse and validate against its function's `parameters`, whether a JSON output parses and
//! validates against the `response_format` schema, whether the output was cut by the length limit, when
//! the first tool call arrived and how many tokens the arguments took. When the length limit
//! (`finish_reason: "length"`) cut the last call mid-way (its arguments are not yet JSON), that call is
//! counted but not judged: it is neither valid nor invalid.
//!
//! Worked out once per finished request by the aggregator, from the request body and the payloads the
//! record keeps anyway — never on the request path — and only in runs whose bodies can carry `tools` or
//! `response_format` at all ([`Analyzer::for_run`]), so any other run costs nothing. The request's
//! `tools` / `tool_choice` / `response_format` are compiled once per distinct value and cached.
//! evalscope's numbers are unchanged: a tool call is output like text for TTFT and ITL, and
//! `completion_tokens` stays the server's count.

mod reassemble;
mod stats;

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::dataset::Prompts;
use crate::plan::RunPlan;
use crate::record::{RequestRecord, StructuredOutcome};
use crate::structured::{mentions_structure, OutputSpec, RequestSpec};
use crate::tokenizer::Tokenizer;

pub use reassemble::{read, Call, Reply};
pub use stats::ToolCallStats;

/// Distinct request specs kept compiled (a BFCL category has a few hundred); the cache starts over
/// when full.
const CACHE_ENTRIES: usize = 4096;

/// The three keys of a request body that matter here; the rest (messages, …) is skipped unread.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Parts {
    tools: Option<Value>,
    tool_choice: Option<Value>,
    response_format: Option<Value>,
}

/// Works out each record's [`StructuredOutcome`]; owned by the run's aggregator.
pub struct Analyzer {
    tokenizer: Option<Arc<Tokenizer>>,
    /// Compiled specs by the JSON text of the three keys (`None`: the body asks for nothing, or its
    /// spec does not compile).
    cache: HashMap<String, Option<Arc<RequestSpec>>>,
}

impl Analyzer {
    /// The analyzer for a run whose bodies may carry `tools` or `response_format` (from `--extra-args`,
    /// `--query-template`, the dataset's rows or a replayed trace's bodies); `None` for any other run.
    pub fn for_run(
        plan: &RunPlan,
        prompts: &Prompts,
        tokenizer: Option<Arc<Tokenizer>>,
    ) -> Option<Analyzer> {
        let template = plan
            .query_template
            .as_deref()
            .map(|t| t.replace("%m", "m").replace("%p", "p"))
            .and_then(|t| serde_json::from_str::<serde_json::Map<String, Value>>(&t).ok())
            .is_some_and(|t| mentions_structure(&t));
        let trace = plan
            .workload
            .workload_trace()
            .is_some_and(|t| t.iter().any(|r| mentions_structure(&r.body)));
        let may = mentions_structure(&plan.params.extra_args)
            || template
            || trace
            || prompts.mentions_structure();
        may.then(|| Analyzer {
            tokenizer,
            cache: HashMap::new(),
        })
    }

    /// An analyzer without a tokenizer (tests).
    pub fn new(tokenizer: Option<Arc<Tokenizer>>) -> Analyzer {
        Analyzer {
            tokenizer,
            cache: HashMap::new(),
        }
    }

    /// The compiled spec of a request body, `None` when it asks for neither tools nor JSON.
    fn spec(&mut self, request: &str) -> Option<Arc<RequestSpec>> {
        let parts: Parts = serde_json::from_str(request).ok()?;
        if parts.tools.is_none() && parts.response_format.is_none() {
            return None;
        }
        let key =
            serde_json::to_string(&(&parts.tools, &parts.tool_choice, &parts.response_format))
                .ok()?;
        if let Some(hit) = self.cache.get(&key) {
            return hit.clone();
        }
        let spec = RequestSpec::from_parts(
            parts.tools.as_ref(),
            parts.tool_choice.as_ref(),
            parts.response_format.as_ref(),
        )
        .ok()
        .flatten()
        .map(Arc::new);
        if self.cache.len() >= CACHE_ENTRIES {
            self.cache.clear();
        }
        self.cache.insert(key, spec.clone());
        spec
    }

    /// Sets `record.structured` for a successful request that offered tools or asked for JSON.
    pub fn apply(&mut self, record: &mut RequestRecord) {
        if !record.success {
            return;
        }
        let Some(spec) = self.spec(&record.request) else {
            return;
        };
        let reply = read(record);
        record.structured = Some(Box::new(outcome(&spec, &reply, self.tokenizer.as_deref())));
    }
}

/// Why `call` (the `n`-th) is not valid for `spec`, or `None` when it is.
fn call_error(spec: &RequestSpec, n: usize, call: &Call) -> Option<String> {
    let Some(tool) = spec.tool(&call.name) else {
        return Some(format!(
            "tool call {n} names {:?}, which is not an offered function",
            call.name
        ));
    };
    let args: Value = match serde_json::from_str(&call.arguments) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "tool call {n} ({}): arguments are not JSON: {e}",
                call.name
            ))
        }
    };
    let schema = tool.parameters.as_ref()?;
    schema.check(&args).err().map(|e| {
        format!(
            "tool call {n} ({}): arguments do not validate: {e}",
            call.name
        )
    })
}

/// Why the output `text` is not what `output` asks for, or `None` when it is.
fn output_error(output: &OutputSpec, text: &str) -> Option<String> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(format!("output is not JSON: {e}")),
    };
    match output {
        OutputSpec::JsonObject if !value.is_object() => {
            Some("output is JSON but not an object".to_string())
        }
        OutputSpec::JsonObject | OutputSpec::JsonSchema(None) => None,
        OutputSpec::JsonSchema(Some(schema)) => schema
            .check(&value)
            .err()
            .map(|e| format!("output does not validate: {e}")),
    }
}

/// The outcome of one reply to a request with `spec`.
pub fn outcome(
    spec: &RequestSpec,
    reply: &Reply,
    tokenizer: Option<&Tokenizer>,
) -> StructuredOutcome {
    let truncated = reply.finish_reason.as_deref() == Some("length");
    // A call the length limit cut mid-way (its arguments not yet JSON) is not wrong: it is not judged.
    let cut = truncated
        && reply
            .calls
            .last()
            .is_some_and(|c| serde_json::from_str::<serde::de::IgnoredAny>(&c.arguments).is_err());
    let judged = reply.calls.len() - usize::from(cut);
    let mut error = None;
    let (mut valid, mut invalid) = (0u32, 0u32);
    for (n, call) in reply.calls[..judged].iter().enumerate() {
        match call_error(spec, n, call) {
            None => valid += 1,
            Some(e) => {
                invalid += 1;
                error.get_or_insert(e);
            }
        }
    }
    let schema_valid = spec.output.as_ref().map(|output| {
        let e = output_error(output, &reply.content);
        let ok = e.is_none();
        if let Some(e) = e {
            error.get_or_insert(e);
        }
        ok
    });
    let calls_json = (!reply.calls.is_empty()).then(|| {
        let list: Vec<Value> = reply
            .calls
            .iter()
            .map(
                |c| json!({"index": c.index, "id": c.id, "name": c.name, "arguments": c.arguments}),
            )
            .collect();
        Value::Array(list).to_string()
    });
    let tool_call_tokens = match (reply.calls.is_empty(), tokenizer) {
        (false, Some(tok)) => reply
            .calls
            .iter()
            .map(|c| tok.count(&c.arguments).map(|n| n as u64))
            .sum::<anyhow::Result<u64>>()
            .ok(),
        _ => None,
    };
    StructuredOutcome {
        tools_offered: spec.tools_offered,
        has_tools: !spec.tools.is_empty(),
        tool_calls: reply.calls.len() as u32,
        valid_tool_calls: valid,
        invalid_tool_calls: invalid,
        first_tool_call_s: reply.first_call_s,
        tool_call_tokens,
        calls_json,
        schema_valid,
        truncated,
        error,
    }
}

#[cfg(test)]
mod tests;

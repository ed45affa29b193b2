//! The bodies of a replayed trace run (`workload_trace`, or the synthesized prompts of `mooncake_trace`,
//! `burstgpt_trace`, `azure_trace`): each recorded body with the flags filling only the keys
//! it lacks, its arrival offset, its own headers and its request id.

use std::sync::Arc;

use rand::rngs::StdRng;

use super::single::SweepContext;
use crate::dataset::Item;
use crate::engine::PreparedRequest;
use crate::plan::RunSpec;
use crate::traces::workload_trace::{header_lines, TraceRequest};

/// The run's requests (the first `spec.number` of the trace) and their intended prompt lengths (unknown).
pub(super) fn prepare(
    ctx: &SweepContext<'_>,
    trace: &[TraceRequest],
    spec: &RunSpec,
    rng: &mut StdRng,
) -> (Vec<PreparedRequest>, Vec<Option<u64>>) {
    let requests: Vec<PreparedRequest> = trace
        .iter()
        .take(spec.number as usize)
        .map(|t| {
            let body = ctx.composer.compose(&Item::Body(t.body.clone()), rng);
            let mut r = PreparedRequest::new(body, false);
            r.offset_s = Some(t.offset_s);
            r.request_id = t.request_id.as_deref().map(Arc::from);
            r.extra_headers = header_lines(&t.headers, &ctx.plan.headers).map(Arc::from);
            r
        })
        .collect();
    let intended = trace
        .iter()
        .take(requests.len())
        .map(|t| t.intended_prompt_tokens)
        .collect();
    (requests, intended)
}

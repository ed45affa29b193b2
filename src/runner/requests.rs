//! A run's single requests, produced while it runs: each body serialised once, ahead of the dispatcher
//! (on the producer thread of an [`engine::RequestFeed`]), with its intended prompt length and its arrival
//! offset — in exactly the order and with exactly the content the up-front list had for the same seed
//! (the oracle test keeps that list). Memory holds the feed's bounded look-ahead, not a per-request
//! entry: a run of 86 M requests starts as small as a run of 1,000.
//!
//! Every request of the plan is made in global order (the body composer draws `max_tokens` from one seeded
//! generator, and the dataset's own draws are sequential), then only this process's share is handed over
//! ([`Pick`]: warmup, and global index mod N). The schedule is the one global schedule, drawn lazily
//! ([`Arrivals`]): open loop over the measured requests (unless a replayed trace brings its own offsets),
//! a paced closed loop over all of them.

use std::ops::ControlFlow;
use std::sync::Arc;

use anyhow::Result;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::context::SweepContext;
use super::dispatch::{Payload, Sending};
use crate::api::openai::BodyComposer;
use crate::dataset::{Item, Prompts};
use crate::engine::schedule::{ArrivalShape, Arrivals};
use crate::engine::{self, PreparedRequest, RequestFeed};
use crate::plan::{Load, ModelMix, PromptSource, RunSpec};
use crate::shard::Pick;
use crate::traces::workload_trace::{header_lines, TraceRequest};

/// Where a run's requests come from.
enum Source {
    /// A replayed trace's records (`workload_trace`, or the synthesized prompts of `mooncake_trace`,
    /// `burstgpt_trace`, `azure_trace`): each recorded body with the flags filling only the keys it lacks,
    /// its arrival offset, its own headers and its request id.
    Trace {
        requests: TraceList,
        /// Names of the flags' headers (they win over a record's own).
        global_headers: Vec<(String, String)>,
    },
    /// The dataset's inputs (a fixed prompt: one body, reused by every request, as evalscope samples
    /// `max_tokens` once for it, too).
    Dataset {
        prompts: Arc<Prompts>,
        fixed: bool,
        dataset_offset: u64,
        seed: u64,
    },
}

/// A trace's records, shared with the plan or the prompts.
enum TraceList {
    Plan(Arc<Vec<TraceRequest>>),
    Built(Arc<crate::dataset::replay_prompt::Built>),
}

impl TraceList {
    fn requests(&self) -> &[TraceRequest] {
        match self {
            TraceList::Plan(v) => v,
            TraceList::Built(b) => &b.requests,
        }
    }
}

/// How the requests are timed.
#[derive(Debug, Clone, Copy)]
struct Timing {
    load: Load,
    shape: ArrivalShape,
    seed: u64,
}

/// Everything the producer needs, owned (it runs on its own thread).
pub(super) struct RunRequests {
    source: Source,
    composer: BodyComposer,
    /// The run's seed: the body composer's generator and the schedule.
    seed: u64,
    warmup: usize,
    /// A replayed trace's first records marked warmup: sent on the trace's own schedule, left out of the
    /// results (evalscope's `workload_trace` warmup; the separate warmup phase is off for traces).
    trace_warmup: usize,
    /// Requests of the plan's run (all shards), warmup included.
    len: usize,
    timing: Timing,
    /// `--lora-modules`: each request's model, drawn from the run's seed and its global index.
    models: Option<Arc<ModelMix>>,
}

impl RunRequests {
    /// The requests of run `spec` with seed `seed`.
    pub(super) fn new(ctx: &SweepContext<'_>, spec: &RunSpec, seed: u64) -> RunRequests {
        let plan = ctx.plan;
        let trace = match (plan.workload.workload_trace(), &ctx.prompts.replay) {
            (Some(t), _) => Some(TraceList::Plan(t.clone())),
            (None, Some(b)) => Some(TraceList::Built(b.clone())),
            (None, None) => None,
        };
        let total = spec.total() as usize;
        let mut trace_warmup = 0;
        let (source, len) = match trace {
            Some(requests) => {
                let len = requests.requests().len().min(spec.number as usize);
                // `--warmup-num` counts the trace's own first records (a fraction: of those replayed).
                trace_warmup =
                    (crate::plan::warmup_requests(plan.warmup_num, len as u64) as usize).min(len);
                let global_headers = plan
                    .headers
                    .iter()
                    .map(|(k, _)| (k.clone(), String::new()))
                    .collect();
                let source = Source::Trace {
                    requests,
                    global_headers,
                };
                (source, len)
            }
            None => {
                let source = Source::Dataset {
                    prompts: ctx.prompts.clone(),
                    fixed: matches!(plan.prompts, PromptSource::Fixed(_)),
                    dataset_offset: spec.dataset_offset,
                    seed: seed.rotate_left(17) ^ 0xDA7A_5E7D_0F5E_ED00,
                };
                (source, total)
            }
        };
        RunRequests {
            source,
            composer: ctx.composer.clone(),
            seed,
            warmup: (spec.warmup as usize).min(len),
            trace_warmup,
            len,
            timing: Timing {
                load: spec.load,
                shape: plan.server_side.arrival,
                seed,
            },
            models: plan.traffic.models.clone(),
        }
    }

    /// Requests of the plan's run (all shards), warmup included.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Warmup requests (first).
    pub(super) fn warmup(&self) -> usize {
        self.warmup
    }

    /// Starts producing the requests `pick` keeps; the feed yields them in order.
    pub(super) fn start(self, pick: Pick) -> Result<(RequestFeed, engine::feed::Producer)> {
        RequestFeed::spawn(pick.kept(), pick.warmup, move |sink| {
            self.produce(pick, sink)
        })
    }

    /// Hands the requests `pick` keeps to `sink`, in order, until it breaks.
    pub(super) fn produce(
        &self,
        pick: Pick,
        sink: &mut dyn FnMut(PreparedRequest) -> ControlFlow<()>,
    ) -> Result<()> {
        let mut schedule = self.schedule();
        let mut i = 0;
        self.each(&mut |mut r| {
            let offset = schedule.next_for(i, &r);
            let keep = pick.keeps(i);
            i += 1;
            if !keep {
                return ControlFlow::Continue(());
            }
            r.offset_s = offset;
            sink(r)
        })
    }

    /// The schedule of this run's mode.
    fn schedule(&self) -> Schedule {
        let t = self.timing;
        match t.load {
            Load::Trace { .. } => Schedule::Own,
            Load::Open { rate } => Schedule::From {
                first: self.warmup,
                arrivals: Box::new(Arrivals::seeded(
                    self.len - self.warmup,
                    rate.per_s(),
                    t.shape,
                    t.seed,
                )),
            },
            Load::Closed {
                pacing: Some(rate), ..
            } => Schedule::From {
                first: 0,
                arrivals: Box::new(Arrivals::seeded(self.len, rate.per_s(), t.shape, t.seed)),
            },
            Load::Closed { pacing: None, .. } => Schedule::Unpaced,
        }
    }

    /// The model `--lora-modules` gives global request `i`.
    fn model_of(&self, i: usize) -> Option<&str> {
        let mix = self.models.as_ref()?;
        Some(&**mix.pick(self.seed, i as u64))
    }

    /// Every request of the plan's run in global order (without offsets, but a trace's own), until `sink`
    /// breaks.
    fn each(&self, sink: &mut dyn FnMut(PreparedRequest) -> ControlFlow<()>) -> Result<()> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        match &self.source {
            Source::Trace {
                requests,
                global_headers,
            } => {
                for (i, t) in requests.requests().iter().take(self.len).enumerate() {
                    let item = Item::Body(t.body.clone());
                    let body = self.composer.compose_as(&item, &mut rng, self.model_of(i));
                    let mut r = PreparedRequest::new(body, i < self.trace_warmup);
                    r.offset_s = Some(t.offset_s);
                    r.request_id = t.request_id.as_deref().map(Arc::from);
                    r.extra_headers = header_lines(&t.headers, global_headers).map(Arc::from);
                    r.intended_prompt_tokens = t.intended_prompt_tokens;
                    if sink(r).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            Source::Dataset {
                prompts,
                fixed,
                dataset_offset,
                seed,
            } => {
                let mut i = 0;
                let mut one = None;
                let n = if *fixed { 1.min(self.len) } else { self.len };
                prompts.for_run(n, *dataset_offset, *seed, &mut |p| {
                    let body = self
                        .composer
                        .compose_as(&p.item, &mut rng, self.model_of(i));
                    let mut r = PreparedRequest::new(body, i < self.warmup);
                    r.intended_prompt_tokens = p.intended_prompt_tokens;
                    i += 1;
                    if *fixed {
                        one = Some(r);
                        return ControlFlow::Break(());
                    }
                    sink(r)
                })?;
                if let Some(one) = one {
                    // One body (one `max_tokens` draw, as evalscope); with --lora-modules, each its model.
                    let value = self.models.is_some().then(|| {
                        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(
                            &one.body,
                        )
                    });
                    for i in 0..self.len {
                        let mut r = one.clone();
                        r.is_warmup = i < self.warmup;
                        if let (Some(Ok(v)), Some(model)) = (&value, self.model_of(i)) {
                            let mut v = v.clone();
                            crate::api::openai::set_model(&mut v, model);
                            r.body = Arc::from(crate::pyjson::dumps(&v));
                        }
                        if sink(r).is_break() {
                            break;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// This process's share of run `spec`'s single requests (all of them unless sharded), as a feed whose
/// producer is started and has filled its look-ahead: a run that fits in it is wholly prepared before the
/// first request, and a dataset that fails at once fails before it. `workers` is the dispatcher's cap.
pub(super) async fn prepare(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
    workers: usize,
) -> Result<Sending> {
    let started = std::time::Instant::now();
    let requests = RunRequests::new(ctx, spec, seed);
    let work = crate::shard::split(ctx.plan.sharding.as_ref(), spec, requests.len(), workers);
    debug_assert_eq!(work.pick.warmup, requests.warmup());
    let (mut feed, producer) = requests.start(work.pick)?;
    let ready = feed.prime().await;
    if ready < feed.len() && !feed.producing() {
        // The producer ended early: its error says why.
        drop(feed);
        producer.finish().await?;
        anyhow::bail!("the request producer stopped after {ready} requests");
    }
    let elapsed = started.elapsed().as_secs_f64();
    if ready < feed.len() {
        tracing::info!(
            "Prepared the first {ready} of {} request bodies in {elapsed:.2} s (the rest are prepared while the run goes on)",
            feed.len()
        );
    } else {
        tracing::info!("Prepared {ready} request bodies in {elapsed:.2} s");
    }
    Ok(Sending {
        work,
        payload: Payload::Requests { feed, producer },
    })
}

/// The arrival offsets handed out, by global index.
enum Schedule {
    /// Unpaced closed loop: none.
    Unpaced,
    /// A replayed trace's own offsets (open loop).
    Own,
    /// The seeded schedule, from global index `first` on.
    From {
        first: usize,
        arrivals: Box<Arrivals>,
    },
}

impl Schedule {
    /// The offset of global request `i` (called for every `i` in order, kept or not).
    fn next_for(&mut self, i: usize, r: &PreparedRequest) -> Option<f64> {
        match self {
            Schedule::Unpaced => None,
            Schedule::Own => r.offset_s,
            Schedule::From { first, arrivals } => {
                if i < *first {
                    None
                } else {
                    arrivals.next()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

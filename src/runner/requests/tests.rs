//! The oracle test of the lazy producer: for a representative set of datasets and flags, the requests it
//! hands over (bodies, warmup flags, intended prompt lengths, arrival offsets bit for bit, trace ids and
//! headers) are exactly those of the up-front list the runner built before (kept below, as it was:
//! `old_prepare`, `old_split`, and the dispatchers' schedule rule `old_offsets`).

use std::sync::Arc;

use clap::Parser;
use rand::SeedableRng;

use super::*;
use crate::engine::schedule::seeded_offsets_s;
use crate::plan::RunPlan;
use crate::shutdown::Shutdown;

// ── The up-front path, as it was ─────────────────────────────────────────────────────────────────────

/// Every body of the run, serialised once, and each request's intended prompt tokens.
fn old_prepare(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
) -> (Vec<PreparedRequest>, Vec<Option<u64>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let total = spec.total() as usize;
    let mut bodies = Vec::with_capacity(total);
    let mut intended = Vec::with_capacity(total);
    if let Some(trace) = ctx.plan.workload.workload_trace() {
        return old_trace(ctx, trace, spec, &mut rng);
    }
    if let Some(built) = &ctx.prompts.replay {
        return old_trace(ctx, &built.requests, spec, &mut rng);
    }
    let fixed = matches!(ctx.plan.prompts, PromptSource::Fixed(_));
    let n = if fixed { 1 } else { total };
    let dataset_seed = seed.rotate_left(17) ^ 0xDA7A_5E7D_0F5E_ED00;
    ctx.prompts
        .for_run(n, spec.dataset_offset, dataset_seed, &mut |p| {
            bodies.push(ctx.composer.compose(&p.item, &mut rng));
            intended.push(p.intended_prompt_tokens);
            ControlFlow::Continue(())
        })
        .unwrap();
    if fixed {
        let (body, i) = (bodies[0].clone(), intended[0]);
        bodies = vec![body; total];
        intended = vec![i; total];
    }
    let requests = bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| PreparedRequest::new(body, (i as u64) < spec.warmup))
        .collect();
    (requests, intended)
}

fn old_trace(
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

/// The shard split of the prepared list: kept requests, their intended lengths, and the offsets given by
/// the global schedule (`None`: the dispatcher draws its own).
fn old_split(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
    requests: Vec<PreparedRequest>,
    intended: Vec<Option<u64>>,
) -> (Vec<PreparedRequest>, Vec<Option<u64>>, Option<Vec<f64>>) {
    let shape = ctx.plan.server_side.arrival;
    let rate = spec.load.rate_as_written();
    let warmup = (spec.warmup as usize).min(requests.len());
    let measured_total = requests.len() - warmup;
    let Some(s) = ctx.plan.sharding.as_ref().filter(|s| s.is_split()) else {
        return (requests, intended, None);
    };
    let (k, n) = (s.index as usize, s.count as usize);
    let keep = |i: usize| i < warmup || (i - warmup) % n == k;
    let kept: Vec<usize> = (0..requests.len()).filter(|&i| keep(i)).collect();
    let offsets_s = match (spec.load.is_open(), rate > 0.0) {
        (true, _) => {
            let global = seeded_offsets_s(measured_total, rate, shape, seed);
            Some(kept[warmup..].iter().map(|&i| global[i - warmup]).collect())
        }
        (false, true) => {
            let global = seeded_offsets_s(requests.len(), rate, shape, seed);
            Some(kept.iter().map(|&i| global[i]).collect())
        }
        (false, false) => None,
    };
    let pick = |i: &usize| keep(*i);
    let intended = intended
        .into_iter()
        .enumerate()
        .filter(|(i, _)| pick(i))
        .map(|(_, v)| v)
        .collect();
    let requests = requests
        .into_iter()
        .enumerate()
        .filter(|(i, _)| pick(i))
        .map(|(_, r)| r)
        .collect();
    (requests, intended, offsets_s)
}

/// The offset each dispatcher used for each request of the list: open loop, a trace's own offsets, else
/// the given ones, else its seeded schedule of the measured requests; paced closed loop, the given ones
/// or its seeded schedule of every request.
fn old_offsets(
    ctx: &SweepContext<'_>,
    spec: &RunSpec,
    seed: u64,
    requests: &[PreparedRequest],
    given: Option<Vec<f64>>,
) -> Vec<Option<f64>> {
    let shape = ctx.plan.server_side.arrival;
    let rate = spec.load.rate_as_written();
    match (spec.load.is_open(), rate > 0.0) {
        (true, _) => {
            let split = requests.iter().take_while(|r| r.is_warmup).count();
            let measured = &requests[split..];
            let own = measured
                .iter()
                .map(|r| r.offset_s)
                .collect::<Option<Vec<f64>>>()
                .filter(|o| !o.is_empty());
            let offsets = match (own, given) {
                (Some(own), _) => own,
                (None, Some(given)) => given,
                (None, None) => seeded_offsets_s(measured.len(), rate, shape, seed),
            };
            std::iter::repeat_n(None, split)
                .chain(offsets.into_iter().map(Some))
                .collect()
        }
        (false, true) => given
            .unwrap_or_else(|| seeded_offsets_s(requests.len(), rate, shape, seed))
            .into_iter()
            .map(Some)
            .collect(),
        (false, false) => vec![None; requests.len()],
    }
}

// ── The comparison ───────────────────────────────────────────────────────────────────────────────────

/// What a dispatcher sees of one request.
type Seen = (
    String,
    bool,
    Option<u64>,
    Option<u64>,
    Option<String>,
    Option<String>,
);

fn seen(r: &PreparedRequest, intended: Option<u64>, offset: Option<f64>) -> Seen {
    (
        r.body.to_string(),
        r.is_warmup,
        intended,
        offset.map(f64::to_bits),
        r.request_id.as_deref().map(str::to_string),
        r.extra_headers.as_deref().map(str::to_string),
    )
}

fn plan_of(args: &str) -> RunPlan {
    let mut argv = vec!["llmperf".to_string(), "--model".into(), "m".into()];
    argv.extend(shell_words(args));
    let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
    RunPlan::from_cli(cli, chrono::Local::now()).unwrap_or_else(|e| panic!("{args}: {}", e.0))
}

/// Splits on spaces (the arguments below hold no quoted spaces).
fn shell_words(args: &str) -> Vec<String> {
    args.split_whitespace().map(str::to_string).collect()
}

fn prompts_of(plan: &RunPlan) -> Arc<Prompts> {
    let tokenizer = plan.tokens.tokenizer_path.as_ref().map(|_| {
        let dir = crate::test_support::tokenizer_dir("qwen3");
        Arc::new(crate::tokenizer::Tokenizer::load(dir.to_str().unwrap()).unwrap())
    });
    let limit = plan.runs.iter().map(|r| r.total()).max().unwrap_or(1) as usize;
    Arc::new(Prompts::load(plan, tokenizer, limit).unwrap())
}

/// A sweep's context for `plan` (its prompts loaded, no server behind the URL: nothing is sent).
fn context_of(plan: &RunPlan) -> SweepContext<'_> {
    SweepContext {
        plan,
        root: crate::run_folder::RunRoot::of(plan),
        url: "http://127.0.0.1:9/v1/chat/completions".parse().unwrap(),
        prompts: prompts_of(plan),
        composer: BodyComposer::new(
            &plan.model,
            plan.params.clone(),
            plan.query_template.clone(),
        )
        .for_api(plan.api),
        shutdown: Shutdown::new(),
        visualizer: None,
        tally: Box::leak(Box::default()),
        seed: 0,
    }
}

/// The old list and the lazy producer agree on every run of `args`; returns the requests compared.
fn agree(args: &str) -> usize {
    let plan = plan_of(args);
    let ctx = context_of(&plan);
    let mut compared = 0;
    for (run, spec) in plan.runs.iter().enumerate() {
        let seed = 0xC0FFEE + run as u64;
        let (requests, intended) = old_prepare(&ctx, spec, seed);
        let (requests, intended, given) = old_split(&ctx, spec, seed, requests, intended);
        let offsets = old_offsets(&ctx, spec, seed, &requests, given);
        let want: Vec<Seen> = requests
            .iter()
            .zip(&intended)
            .zip(&offsets)
            .map(|((r, i), o)| seen(r, *i, *o))
            .collect();

        let lazy = RunRequests::new(&ctx, spec, seed);
        let pick = crate::shard::split(
            plan.sharding.as_ref(),
            spec,
            lazy.len(),
            spec.load.parallel().map_or(1, |p| p.get()),
        )
        .pick;
        assert_eq!(pick.kept(), want.len(), "{args}: the feed's length");
        let mut got = Vec::new();
        lazy.produce(pick, &mut |r| {
            got.push(seen(&r, r.intended_prompt_tokens, r.offset_s));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(got.len(), want.len(), "{args}: run {run}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{args}: run {run}, request {i}");
        }
        compared += got.len();
    }
    compared
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/evalscope-golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn line_file() -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    let lines: String = (0..7).map(|i| format!("prompt line {i}\n")).collect();
    std::io::Write::write_all(&mut f, lines.as_bytes()).unwrap();
    f
}

#[test]
fn fixed_prompt_and_line_by_line_closed_loop() {
    let lines = line_file();
    let path = lines.path().display();
    // More requests than the look-ahead, a max_tokens range (one draw per request), warmup, a sweep.
    agree("--prompt hello --number 700 5000 --parallel 4 8 --warmup-num 5 --max-tokens 2 9");
    agree(&format!(
        "--dataset line_by_line --dataset-path {path} --number 5000 --parallel 3 --max-tokens 2 9 --warmup-num 2"
    ));
    // Paced closed loop (one schedule over every request, warmup included), gamma arrivals.
    agree(&format!(
        "--dataset line_by_line --dataset-path {path} --number 3000 --parallel 3 --rate 40 --burstiness 0.5 --max-tokens 2 9 --warmup-num 3"
    ));
}

#[test]
fn open_loop_poisson_gamma_and_ramp() {
    let lines = line_file();
    let path = lines.path().display();
    agree("--open-loop --rate 50 --number 3000 --warmup-num 2 --prompt x --max-tokens 2 9");
    agree(&format!(
        "--open-loop --rate 80 20 --number 6000 100 --burstiness 2.5 --ramp-up 3 --dataset line_by_line --dataset-path {path} --max-tokens 1 4"
    ));
}

#[test]
fn shards_split_by_global_index_and_keep_the_global_schedule() {
    let lines = line_file();
    let path = lines.path().display();
    for k in 0..3 {
        agree(&format!(
            "--open-loop --rate 60 --number 4001 --warmup-num 4 --dataset line_by_line --dataset-path {path} --max-tokens 2 9 --burstiness 0.7 --shard {k}/3"
        ));
        agree(&format!(
            "--prompt hi --number 1001 --parallel 5 --rate 30 --warmup-num 2 --max-tokens 2 9 --shard {k}/3"
        ));
        agree(&format!(
            "--dataset line_by_line --dataset-path {path} --number 10 --parallel 3 --shard {k}/3"
        ));
    }
}

#[test]
fn random_with_a_tokenizer_and_a_replayed_trace() {
    let qwen3 = crate::test_support::tokenizer_dir("qwen3");
    let tok = qwen3.display();
    // Token ids: cheap enough for several windows of draws.
    let n = agree(&format!(
        "--dataset random --tokenizer-path {tok} --tokenize-prompt --min-prompt-length 5 --max-prompt-length 30 --prefix-length 2 --prefix-count 3 --number 9000 --dataset-offset 11 --max-tokens 2 9"
    ));
    assert_eq!(n, 9000);
    // Text through decode/re-encode and the chat template; a sweep moves the dataset offset.
    agree(&format!(
        "--dataset random --tokenizer-path {tok} --min-prompt-length 20 --max-prompt-length 60 --number 60 40 --parallel 2 3 --open-loop --rate 10 20"
    ));
    agree(&format!(
        "--dataset random_embedding --tokenizer-path {tok} --api openai_embedding --min-prompt-length 4 --max-prompt-length 12 --number 50 --parallel 2 --shard 1/2"
    ));
    let trace = fixture("j_workload_trace/trace.jsonl");
    agree(&format!(
        "--open-loop --dataset workload_trace --dataset-path {trace} --headers X-Tenant=flag"
    ));
    agree(&format!(
        "--open-loop --dataset workload_trace --dataset-path {trace} --number 5 --rate 5 --shard 1/2"
    ));
}

#[tokio::test]
async fn the_feed_hands_over_what_the_producer_makes() {
    let plan = plan_of("--prompt hello --number 3000 --warmup-num 3 --max-tokens 2 9 --rate 25");
    let ctx = context_of(&plan);
    let spec = &plan.runs[0];
    let direct = RunRequests::new(&ctx, spec, 9);
    let mut want = Vec::new();
    direct
        .produce(crate::shard::Pick::all(direct.len(), 3), &mut |r| {
            want.push(seen(&r, r.intended_prompt_tokens, r.offset_s));
            ControlFlow::Continue(())
        })
        .unwrap();
    let lazy = RunRequests::new(&ctx, spec, 9);
    let pick = crate::shard::Pick::all(lazy.len(), lazy.warmup());
    let (mut feed, producer) = lazy.start(pick).unwrap();
    assert_eq!((feed.len(), feed.warmup()), (3003, 3));
    let mut got = Vec::new();
    while let Some((i, r)) = feed.next().await {
        assert_eq!(i, got.len());
        got.push(seen(&r, r.intended_prompt_tokens, r.offset_s));
    }
    producer.finish().await.unwrap();
    assert_eq!(got, want);
}

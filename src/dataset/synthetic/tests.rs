//! The oracle of the windowed generation: each synthetic dataset hands over, through [`Synthetic::for_run`]
//! (draws made a window at a time), exactly the inputs the whole-run draws made before.

use clap::Parser;

use super::*;
use crate::dataset::random::generate_batched;

fn synthetic(args: &[&str]) -> Synthetic {
    let tok = crate::test_support::tokenizer_dir("qwen3");
    let mut argv = vec![
        "llmperf",
        "--model",
        "m",
        "--tokenizer-path",
        tok.to_str().unwrap(),
    ];
    argv.extend_from_slice(args);
    let plan = crate::plan::RunPlan::from_cli(
        crate::cli::Cli::try_parse_from(argv).unwrap(),
        chrono::Local::now(),
    )
    .unwrap_or_else(|e| panic!("{args:?}: {}", e.0));
    let tokenizer = Arc::new(Tokenizer::load(tok.to_str().unwrap()).unwrap());
    let kind = plan.dataset_kind().unwrap();
    let kwargs = crate::dataset::template_kwargs(&plan);
    Synthetic::new(&plan, kind, Some(tokenizer), &kwargs).unwrap()
}

fn lazy(s: &Synthetic, total: usize, offset: u64, seed: u64) -> Vec<Prepared> {
    let mut out = Vec::new();
    s.for_run(total, offset, seed, &mut |p| {
        out.push(p);
        ControlFlow::Continue(())
    })
    .unwrap();
    out
}

/// `random` / `random_vl` as before: every draw of the run at once, then the batches.
fn old_random_text(s: &Synthetic, total: usize, offset: u64, seed: u64) -> Vec<Prepared> {
    let text = s.text.as_ref().unwrap();
    let draws = text.draws(total, offset, seed);
    let mut image_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1A6E_5EED);
    let mut out = Vec::new();
    generate_batched(
        total,
        s.threads,
        |i| text.item(&draws, i),
        |_, g| out.push(s.random_input(g, &mut image_rng)),
    )
    .unwrap();
    out
}

/// `random_embedding(_batch)` / `random_rerank` as before: every length, then every seed, from one stream.
fn old_random_strings(s: &Synthetic, total: usize, seed: u64) -> Vec<Prepared> {
    let (lo, hi) = s.string_bounds();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let lens: Vec<u64> = (0..total).map(|_| rng.random_range(lo..hi)).collect();
    let seeds: Vec<u64> = (0..total).map(|_| rng.random()).collect();
    (0..total)
        .map(|i| {
            let (item, tokens) = s.random_string(lens[i] as usize, seeds[i]).unwrap();
            Prepared {
                item,
                intended_prompt_tokens: tokens,
            }
        })
        .collect()
}

#[test]
fn random_ids_over_several_windows() {
    let s = synthetic(&[
        "--dataset",
        "random",
        "--tokenize-prompt",
        "--min-prompt-length",
        "2",
        "--max-prompt-length",
        "50",
        "--prefix-length",
        "3",
        "--prefix-count",
        "2",
    ]);
    let total = 2 * WINDOW + 17;
    assert_eq!(lazy(&s, total, 5, 11), old_random_text(&s, total, 5, 11));
}

#[test]
fn random_text_and_images() {
    let s = synthetic(&[
        "--dataset",
        "random",
        "--min-prompt-length",
        "10",
        "--max-prompt-length",
        "40",
    ]);
    assert_eq!(lazy(&s, 40, 3, 2), old_random_text(&s, 40, 3, 2));
    let vl = synthetic(&[
        "--dataset",
        "random_vl",
        "--min-prompt-length",
        "10",
        "--max-prompt-length",
        "30",
        "--image-num",
        "2",
        "--image-width",
        "16",
        "--image-height",
        "16",
    ]);
    assert_eq!(lazy(&vl, 12, 0, 4), old_random_text(&vl, 12, 0, 4));
}

#[test]
fn random_strings_over_several_windows() {
    let s = synthetic(&[
        "--dataset",
        "random_embedding",
        "--api",
        "openai_embedding",
        "--min-prompt-length",
        "1",
        "--max-prompt-length",
        "3",
    ]);
    let total = WINDOW + 9;
    assert_eq!(lazy(&s, total, 0, 8), old_random_strings(&s, total, 8));
    let rerank = synthetic(&[
        "--dataset",
        "random_rerank",
        "--api",
        "openai_rerank",
        "--min-prompt-length",
        "2",
        "--max-prompt-length",
        "5",
    ]);
    assert_eq!(lazy(&rerank, 30, 0, 9), old_random_strings(&rerank, 30, 9));
}

#[test]
fn a_breaking_sink_stops_the_run() {
    let s = synthetic(&["--dataset", "random", "--tokenize-prompt"]);
    let mut n = 0;
    s.for_run(3 * WINDOW, 0, 1, &mut |_| {
        n += 1;
        if n == WINDOW + 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(n, WINDOW + 2);
}

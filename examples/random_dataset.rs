//! Speed and memory of `--dataset random` generation: 10,000 requests of 8,192 tokens (the goal:
//! ≤ 10 s on a 2-core machine, memory proportional to one batch). Prints the figures for both modes:
//! token ids (`--tokenize-prompt`) and text (decode/re-encode convergence), each turned into request
//! bodies as a run does.
//!
//! Run: `cargo run --release --example random_dataset -- [TOKENIZER_DIR] [REQUESTS] [TOKENS] [ids|text|verify]`
//! (defaults: `../shared/tokenizers/qwen3`, 10000, 8192, both modes; `verify` compares the fast text path
//! with whole-window re-encoding; `digest` prints a fingerprint of the text prompts to compare builds).

use std::sync::Arc;
use std::time::Instant;

use llmperf::dataset::random::{
    default_threads, generate_batched, RandomPrompt, RandomText, Vocab,
};
use llmperf::tokenizer::Tokenizer;

/// Peak resident memory of this process so far, MiB (Linux `VmHWM`).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU time (user + system, all threads) this process has used so far, seconds (Linux `/proc/self/stat`,
/// clock ticks of 1/100 s).
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (which may hold spaces) — utime and stime are the 12th and 13th.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).cloned().unwrap_or_else(|| {
        std::env::var("LLMPERF_SHARED_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared").to_string())
            + "/tokenizers/qwen3"
    });
    let requests: usize = args.get(2).map_or(Ok(10_000), |s| s.parse())?;
    let tokens: u64 = args.get(3).map_or(Ok(8192), |s| s.parse())?;
    let threads = default_threads();
    if args.get(4).map(String::as_str) == Some("verify") {
        // The fast (stitched) text path against whole-window re-encoding: every prompt must be identical.
        let fast = RandomText::new(
            Vocab::new(Arc::new(Tokenizer::load(&dir)?))?,
            (tokens, tokens),
            0,
            0,
            1,
            false,
        )?;
        let slow = fast.clone().without_fast_path();
        let draws = fast.draws(requests, 0, 7);
        let mut differ = 0;
        generate_batched(
            requests,
            threads,
            |i| Ok((fast.item(&draws, i)?, slow.item(&draws, i)?)),
            |_, (a, b)| differ += usize::from(a != b),
        )?;
        println!(
            "verify: {requests} prompts of {tokens} tokens, {differ} differ; stitched/whole {:?}",
            fast.fast_path_stats()
        );
        return Ok(());
    }
    if args.get(4).map(String::as_str) == Some("digest") {
        // A fingerprint of every text prompt (seed 42, no prefix, then seed 7 with a 40-token prefix), to compare
        // builds: equal digests, identical prompts.
        let vocab = Vocab::new(Arc::new(Tokenizer::load(&dir)?))?;
        for (seed, prefix) in [(42, 0), (7, 40)] {
            let gen = RandomText::new(vocab.clone(), (tokens, tokens), 0, prefix, 1, false)?;
            let draws = gen.draws(requests, 0, seed);
            let mut h = std::collections::hash_map::DefaultHasher::new();
            generate_batched(
                requests,
                threads,
                |i| gen.item(&draws, i),
                |i, g| {
                    use std::hash::Hash;
                    (i, g.target_tokens, g.mismatch).hash(&mut h);
                    if let RandomPrompt::Text(t) = &g.prompt {
                        t.hash(&mut h);
                    }
                },
            )?;
            use std::hash::Hasher;
            println!(
                "digest: seed {seed}, prefix {prefix}: {requests} prompts of {tokens} tokens: {:016x}",
                h.finish()
            );
        }
        return Ok(());
    }
    let modes: Vec<bool> = match args.get(4).map(String::as_str) {
        Some("ids") => vec![true],
        Some("text") => vec![false],
        _ => vec![true, false],
    };

    let t = Instant::now();
    let tok = Arc::new(Tokenizer::load(&dir)?);
    println!(
        "tokenizer {dir}: loaded in {:.2} s, vocabulary {}",
        t.elapsed().as_secs_f64(),
        tok.vocab_size()
    );
    let vocab = Vocab::new(tok)?;
    println!(
        "requests {requests} × {tokens} tokens, {threads} threads, peak RSS before: {:.0} MiB",
        peak_rss_mib()
    );

    for tokenize_prompt in modes {
        // Timed from the settings on: text mode precomputes the encoding of the vocabulary sequence there.
        let t = Instant::now();
        let cpu = cpu_secs();
        let gen = RandomText::new(vocab.clone(), (tokens, tokens), 0, 0, 1, tokenize_prompt)?;
        let setup = t.elapsed().as_secs_f64();
        let draws = gen.draws(requests, 0, 42);
        let mut body_bytes = 0usize;
        let mut off_target = 0u64;
        generate_batched(
            requests,
            threads,
            |i| gen.item(&draws, i),
            |_, g| {
                off_target += g.mismatch.unsigned_abs();
                // What a run keeps per request: the serialised body.
                body_bytes += match &g.prompt {
                    RandomPrompt::Ids(ids) => llmperf::pyjson::dumps(ids).len(),
                    RandomPrompt::Text(text) => llmperf::pyjson::dumps(text).len(),
                };
            },
        )?;
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_secs() - cpu;
        let (stitched, whole) = gen.fast_path_stats();
        println!(
            "{:<14} {secs:>7.2} s (setup {setup:.2} s)  CPU {cpu:>6.2} s  {:>10.0} tokens/s  bodies {:>7.1} MiB  off-target tokens {off_target}  peak RSS {:.0} MiB  encodings stitched/whole {stitched}/{whole}",
            if tokenize_prompt { "token ids" } else { "text" },
            (requests as f64 * tokens as f64) / secs,
            body_bytes as f64 / (1024.0 * 1024.0),
            peak_rss_mib()
        );
    }
    Ok(())
}

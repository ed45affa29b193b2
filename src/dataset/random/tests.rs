//! `random` generation with the real Qwen3 tokenizer.

use super::*;

fn qwen3() -> Arc<Tokenizer> {
    let dir = crate::test_support::tokenizer_dir("qwen3");
    Arc::new(Tokenizer::load(dir.to_str().unwrap()).unwrap())
}

fn all(r: &RandomText, total: usize, offset: u64, seed: u64, threads: usize) -> Vec<Generated> {
    let d = r.draws(total, offset, seed);
    let mut out = Vec::new();
    generate_batched(total, threads, |i| r.item(&d, i), |_, g| out.push(g)).unwrap();
    out
}

#[test]
fn token_windows_are_contiguous_with_a_shared_prefix() {
    let vocab = Vocab::new(qwen3()).unwrap();
    let allowed = vocab.allowed.clone();
    let r = RandomText::new(vocab, (20, 30), 0, 5, 1, true).unwrap();
    let items = all(&r, 40, 0, 7, 2);
    let mut prefix = None;
    for g in &items {
        let RandomPrompt::Ids(ids) = &g.prompt else {
            panic!("ids expected")
        };
        assert_eq!(ids.len() as u64, g.target_tokens);
        assert!((25..=35).contains(&ids.len()), "{}", ids.len());
        assert_eq!(*prefix.get_or_insert(ids[..5].to_vec()), ids[..5]);
        // The input is a run of consecutive allowed ids (wrapping at the end of the vocabulary).
        let pos: Vec<usize> = ids[5..]
            .iter()
            .map(|id| allowed.binary_search(id).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[1] == (w[0] + 1) % allowed.len()));
    }
}

#[test]
fn same_seed_same_prompts_and_threads_do_not_change_them() {
    let vocab = Vocab::new(qwen3()).unwrap();
    let r = RandomText::new(vocab, (30, 60), 0, 0, 1, false).unwrap();
    let a = all(&r, 20, 0, 42, 1);
    let b = all(&r, 20, 0, 42, 2);
    assert_eq!(a, b);
    let c = all(&r, 20, 20, 42, 2);
    assert_ne!(a, c, "another --dataset-offset gives other windows");
    let tok = qwen3();
    for g in &a {
        let RandomPrompt::Text(t) = &g.prompt else {
            panic!("text expected")
        };
        assert_eq!(g.mismatch, 0);
        assert_eq!(tok.count(t).unwrap() as u64, g.target_tokens);
    }
}

#[test]
fn distinct_prefixes_round_robin() {
    let vocab = Vocab::new(qwen3()).unwrap();
    let r = RandomText::new(vocab, (4, 4), 0, 3, 3, true).unwrap();
    let items = all(&r, 6, 0, 1, 1);
    let prefix = |i: usize| match &items[i].prompt {
        RandomPrompt::Ids(ids) => ids[..3].to_vec(),
        RandomPrompt::Text(_) => unreachable!(),
    };
    assert_eq!(prefix(0), prefix(3));
    assert_eq!(prefix(1), prefix(4));
    assert_ne!(prefix(0), prefix(1));
    assert_ne!(prefix(1), prefix(2));
}

#[test]
fn template_tokens_shrink_the_bounds() {
    let vocab = Vocab::new(qwen3()).unwrap();
    assert!(RandomText::new(vocab.clone(), (5, 10), 12, 0, 1, false).is_err());
    let r = RandomText::new(vocab, (512, 512), 12, 0, 1, false).unwrap();
    assert!(all(&r, 3, 0, 1, 1).iter().all(|g| g.target_tokens == 500));
}

fn smollm2() -> Arc<Tokenizer> {
    let dir = crate::test_support::tokenizer_dir("smollm2-135m-instruct");
    Arc::new(Tokenizer::load(dir.to_str().unwrap()).unwrap())
}

/// The stitched re-encoding gives exactly what decoding and re-encoding whole windows gives.
#[test]
fn fast_path_matches_whole_window_reencoding() {
    for (tok, prefix) in [(qwen3(), 0), (smollm2(), 24), (qwen3(), 40)] {
        let vocab = Vocab::new(tok).unwrap();
        let fast = RandomText::new(vocab, (1, 2500), 0, prefix, 1, false).unwrap();
        assert!(
            fast.has_fast_path(),
            "byte-level BPE tokenizers get the fast path"
        );
        let slow = fast.clone().without_fast_path();
        for seed in [1, 2] {
            let a = all(&fast, 24, 7, seed, 2);
            let b = all(&slow, 24, 7, seed, 2);
            assert_eq!(a, b, "seed {seed}");
        }
        let (stitched, whole) = fast.fast_path_stats();
        assert!(
            stitched > whole,
            "most encodings are stitched: {stitched}/{whole}"
        );
    }
}

/// Several batches, threads taking indexes as they finish: the sink still sees every index once, in order.
#[test]
fn batches_reach_the_sink_in_index_order() {
    let total = BATCH * 3 * 4 + 5;
    let mut seen = Vec::new();
    generate_batched(
        total,
        3,
        |i| {
            if i % 7 == 0 {
                // Uneven work: some items take longer, so threads finish out of order.
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            Ok(i * 2)
        },
        |i, v| seen.push((i, v)),
    )
    .unwrap();
    assert_eq!(seen, (0..total).map(|i| (i, i * 2)).collect::<Vec<_>>());

    let mut sunk = 0;
    let err = generate_batched(
        total,
        2,
        |i| {
            if i == BATCH * 2 + 3 {
                bail!("item {i} failed")
            }
            Ok(i)
        },
        |_, _| sunk += 1,
    )
    .unwrap_err();
    assert!(err.to_string().contains("failed"), "{err}");
    assert!(
        sunk <= BATCH * 2,
        "nothing past the failing batch is sunk: {sunk}"
    );
}

/// The draws as they were made before the stream: the whole run at once, from one generator.
fn old_draws(r: &RandomText, total: usize, dataset_offset: u64, seed: u64) -> RunDraws {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = r.vocab.allowed.len() as u64;
    let pool = r.prefix_pool(&mut rng);
    let input_lens = (0..total).map(|_| rng.random_range(r.lo..r.hi)).collect();
    let offsets = (0..total)
        .map(|_| (rng.random_range(0..n) + dataset_offset % n) % n)
        .collect();
    let seeds = (0..total).map(|_| rng.random::<u64>()).collect();
    RunDraws {
        pool: Arc::new(pool),
        base: 0,
        input_lens,
        offsets,
        seeds,
    }
}

/// The windows of the stream are the old whole-run draws, value for value, whatever the window size;
/// and the prompts made from them are the same.
#[test]
fn the_draw_stream_is_the_whole_run_of_draws() {
    let vocab = Vocab::new(qwen3()).unwrap();
    let r = RandomText::new(vocab, (3, 900), 0, 4, 5, true).unwrap();
    for (total, offset, seed) in [(0, 0, 1), (1, 3, 2), (1000, 77, 3), (5000, 1 << 40, 4)] {
        let old = old_draws(&r, total, offset, seed);
        for window in [1, 7, 4096, total.max(1)] {
            let mut stream = r.draw_stream(total, offset, seed);
            let (mut lens, mut offs, mut seeds) = (Vec::new(), Vec::new(), Vec::new());
            let mut base = 0;
            loop {
                let w = stream.window(window);
                if w.is_empty() {
                    break;
                }
                assert_eq!(w.base, base);
                assert_eq!(w.pool, old.pool);
                for i in base..base + w.len() {
                    assert_eq!(r.item(&w, i).unwrap(), r.item(&old, i).unwrap());
                }
                base += w.len();
                lens.extend(w.input_lens);
                offs.extend(w.offsets);
                seeds.extend(w.seeds);
            }
            assert_eq!(lens, old.input_lens, "total {total} window {window}");
            assert_eq!(offs, old.offsets);
            assert_eq!(seeds, old.seeds);
        }
    }
}

/// A sink that breaks stops the generation: nothing more is handed over.
#[test]
fn a_breaking_sink_stops_the_batches() {
    for threads in [1, 2] {
        let mut seen = 0;
        let flow = generate_batched_until(BATCH * 10, threads, Ok, |i, _| {
            seen += 1;
            if i == BATCH + 1 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert!(flow.is_break());
        assert_eq!(seen, BATCH + 2, "threads {threads}");
    }
}

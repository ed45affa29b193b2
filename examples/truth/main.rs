//! Measurement truth and client speed: runs llmperf against the built-in simulator and prints how far
//! its timings are from the simulator's ground truth, how fast the client can go, how much memory many
//! concurrent streams take, and how precisely the open loop sends on time.
//!
//! `cargo run --release --example truth [-- [--repeat N] [--quick] [SECTION…]]`, SECTION one of
//! `accuracy`, `ceiling`, `store`, `memory`, `open-loop`, `wrk` (llmperf and wrk side by side against the
//! same simulator; needs Debian's `wrk`), `live` (the same TTFT error and ceiling with the dashboard and
//! the metrics endpoint on) (default: all). Each cell is the median of N
//! repeats (default 1); `--quick` runs fewer requests; `--streams N` (repeatable) limits the accuracy table to those
//! concurrencies. See `docs/performance.md` for what each table means. Every measurement runs the simulator and llmperf as two separate processes (this
//! executable started again in `serve-sim` / `client` mode), so the simulator never shares the client's
//! runtime, threads or CPU accounting; both stamp the same system monotonic clock, and each stored request
//! is joined with the simulator's record by the simulator's request number in the response `id`.

mod live;
mod procs;
mod sections;
mod stats;
mod store_cost;
mod vs_wrk;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve-sim") => return procs::serve_sim(&args[1..]),
        Some("client") => return procs::client(&args[1..]),
        _ => {}
    }
    let mut repeat = 1;
    let mut quick = false;
    let mut wanted: Vec<String> = Vec::new();
    let mut streams: Vec<usize> = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--repeat" => repeat = it.next().and_then(|v| v.parse().ok()).expect("--repeat N"),
            "--quick" => quick = true,
            "--streams" => {
                streams.push(it.next().and_then(|v| v.parse().ok()).expect("--streams N"))
            }
            "accuracy" | "ceiling" | "memory" | "open-loop" | "store" | "wrk" | "live" => {
                wanted.push(a)
            }
            other => {
                panic!("unknown argument {other:?}; sections: accuracy ceiling store memory open-loop wrk live")
            }
        }
    }
    let all = wanted.is_empty();
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let root = tempfile::tempdir().expect("temporary directory");
    let mut n = 0;
    // A fresh directory per measurement; the previous one is removed (large databases).
    let mut fresh = || -> PathBuf {
        if n > 0 {
            let _ = std::fs::remove_dir_all(root.path().join(format!("m{n}")));
        }
        n += 1;
        let d = root.path().join(format!("m{n}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    };
    println!(
        "llmperf truth benchmark: {} CPU(s), {repeat} repeat(s) per cell (median shown)\n",
        llmperf::resources::available_cpus()
    );
    if want("accuracy") {
        let mut t = sections::accuracy_table();
        let rounds = if quick { 2 } else { 4 };
        let mut sim_rt = true;
        for _ in 0..repeat {
            let all_streams = [1, 64, 256, 1024];
            for &conc in if streams.is_empty() {
                &all_streams[..]
            } else {
                &streams[..]
            } {
                let rounds = if conc == 1 { rounds * 8 } else { rounds };
                sim_rt &= sections::accuracy(&mut t, conc, rounds, &fresh());
            }
        }
        println!("{}", t.render());
        println!(
            "Simulator process: 2 threads, {}.\n",
            if sim_rt {
                "SCHED_FIFO (its reads and writes are not delayed by other processes)"
            } else {
                "normal priority (SCHED_FIFO not allowed: other processes can delay its reads, which shows as req transit)"
            }
        );
    }
    if want("ceiling") {
        let number = if quick { 20_000 } else { 100_000 };
        for sim_threads in [1] {
            let mut t = sections::ceiling_table(number, sim_threads);
            for _ in 0..repeat {
                for parallel in [64, 256] {
                    sections::ceiling(&mut t, parallel, number, sim_threads, &fresh());
                }
            }
            println!("{}", t.render());
        }
    }
    if want("live") {
        let number = if quick { 20_000 } else { 100_000 };
        let mut t = live::live_table(number);
        for _ in 0..repeat {
            live::live(&mut t, if quick { 2 } else { 4 }, number, &mut fresh);
        }
        println!("{}", t.render());
    }
    if want("wrk") {
        let seconds = if quick { 5 } else { 10 };
        let mut t = vs_wrk::vs_wrk_table(seconds);
        let mut ran = false;
        for _ in 0..repeat {
            for conns in [64, 256] {
                ran |= vs_wrk::vs_wrk(&mut t, conns, seconds, &fresh());
            }
        }
        if ran {
            println!("{}", t.render());
        }
    }
    if want("store") {
        let mut t = store_cost::store_table();
        for _ in 0..repeat {
            store_cost::store_cost(&mut t, 50_000, &fresh());
        }
        println!("{}", t.render());
    }
    if want("memory") {
        let mut t = sections::memory_table();
        for _ in 0..repeat {
            for streams in [1024, 10_000] {
                sections::memory(&mut t, streams, &fresh());
            }
        }
        println!("{}", t.render());
    }
    if want("open-loop") {
        let mut t = sections::open_loop_table();
        let seconds = if quick { 3.0 } else { 10.0 };
        for _ in 0..repeat {
            for (rate, rt) in [(100.0, false), (1000.0, false), (1000.0, true)] {
                sections::open_loop(&mut t, rate, seconds, rt, &fresh());
            }
        }
        println!("{}", t.render());
    }
}

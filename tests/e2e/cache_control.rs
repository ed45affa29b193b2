//! `--reset-prefix-cache` against the real llama.cpp server: started with what its reset needs
//! (`--slot-save-path`, which enables `POST /slots/{id}?action=erase`, and `--cache-ram 0`, since erasing a
//! slot leaves the host-memory prompt cache), the engine detected from `/v1/models`.

use crate::server::RealServer;

const PROMPT: &str = "Write a short paragraph about the history of the lighthouse and why ships needed them at night, with the names of three famous lighthouses";

/// `(cached_tokens, prompt_tokens)` of the first stored request (by send time) of a run folder.
fn first_request(db: &std::path::Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT cached_tokens, prompt_tokens FROM result ORDER BY start_time LIMIT 1",
        [],
        |r| Ok((r.get::<_, Option<i64>>(0)?.unwrap_or(0), r.get(1)?)),
    )
    .unwrap()
}

#[test]
fn a_reset_between_runs_brings_the_cached_share_back_to_zero() {
    let slots = tempfile::tempdir().unwrap();
    let Some(server) = RealServer::start_with(&[
        "--slot-save-path",
        &slots.path().to_string_lossy(),
        "--cache-ram-mib",
        "0",
    ]) else {
        return;
    };
    // No connection test: its short probe would land on the same slot and overwrite the cached prompt.
    let flags =
        "--max-tokens 2 --temperature 0 --parallel 1 1 --number 2 3 --stream --no-test-connection";
    // No reset: the second run's first request finds the prompt cached.
    let run = server
        .run_at("/chat/completions")
        .flag("--prompt", PROMPT)
        .flags(flags);
    run.ok();
    let (cached, prompt) = first_request(&run.run_dir("parallel_1_number_3").db());
    assert!(
        cached * 2 > prompt,
        "warm without a reset: {cached}/{prompt}"
    );

    // A reset before each run: the first request of each is cold again.
    let run = server
        .run_at("/chat/completions")
        .flag("--prompt", PROMPT)
        .flags(flags)
        .flags("--reset-prefix-cache each-run");
    run.ok();
    for dir in ["parallel_1_number_2", "parallel_1_number_3"] {
        let (cached, prompt) = first_request(&run.run_dir(dir).db());
        assert!(
            cached * 10 < prompt,
            "{dir}: cold after the reset: {cached}/{prompt}"
        );
        let reset = &run.run_dir(dir).summary()["prefix_cache_reset"];
        assert_eq!(reset["done"], true, "{reset}");
        assert!(
            reset["endpoint"].as_str().unwrap().contains("/slots/"),
            "{reset}"
        );
        assert!(
            reset["counters_before"]["llamacpp:prompt_tokens_total"].is_number(),
            "{reset}"
        );
    }
}

#[test]
fn without_a_slot_save_path_the_reset_fails_naming_what_llama_server_needs() {
    let Some(server) = RealServer::start(false) else {
        return;
    };
    let run = server
        .run_at("/chat/completions")
        .flags("--prompt hello --max-tokens 2 --number 1 --reset-prefix-cache once");
    let err = run.fails(1);
    assert!(
        err.contains("action=erase") && err.contains("501") && err.contains("--slot-save-path"),
        "{err}"
    );
}

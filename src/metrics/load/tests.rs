use super::*;

fn row(start: f64, end: f64) -> LoadRow {
    LoadRow {
        scheduled_s: Some(start),
        start_s: start,
        end_s: end,
        ..Default::default()
    }
}

fn closed(parallel: u64, number: u64) -> LoadInputs {
    LoadInputs {
        rule: LoadRule::Closed {
            parallel,
            number,
            conversations: false,
        },
        client_limits: vec![],
        warmup_spans: vec![],
    }
}

/// Two slots, each refilled the moment it frees: 2 in flight over the whole send window.
#[test]
fn a_full_closed_loop_is_as_configured() {
    let rows: Vec<LoadRow> = (0..10)
        .flat_map(|i| [row(i as f64, i as f64 + 1.0), row(i as f64, i as f64 + 1.0)])
        .collect();
    let v = judge(&rows, &closed(2, 20));
    assert_eq!(v.delivered_concurrency, Some(2.0));
    assert_eq!(v.max_in_flight, 2);
    assert_eq!(v.as_configured, Some(true));
    assert_eq!(v.reason, None);
    assert_eq!(v.warning(), None);
}

/// One of two slots refilled only after a 1 s pause each time: 1.5 on average.
#[test]
fn slots_left_idle_are_client_limited() {
    let mut rows: Vec<LoadRow> = (0..10).map(|i| row(i as f64, i as f64 + 1.0)).collect();
    rows.extend((0..5).map(|i| row(2.0 * i as f64, 2.0 * i as f64 + 1.0)));
    let v = judge(&rows, &closed(2, 15));
    assert_eq!(v.delivered_concurrency, Some(1.5556));
    assert_eq!(v.as_configured, Some(false));
    let why = v.reason.unwrap();
    assert!(
        why.starts_with("client-limited: 1.56 requests in flight"),
        "{why}"
    );
}

#[test]
fn fewer_requests_than_slots_need_only_be_in_flight_together() {
    let rows = vec![row(0.0, 1.0), row(0.001, 1.0), row(0.002, 1.0)];
    assert_eq!(judge(&rows, &closed(8, 3)).as_configured, Some(true));
    let apart = vec![row(0.0, 1.0), row(1.0, 2.0), row(2.0, 3.0)];
    let v = judge(&apart, &closed(8, 3));
    assert_eq!(v.as_configured, Some(false));
    assert!(v.reason.unwrap().contains("at most 1 of the 3"));
}

#[test]
fn refused_connections_name_the_server() {
    let mut rows: Vec<LoadRow> = (0..4).map(|i| row(i as f64, i as f64 + 1.0)).collect();
    rows[2].failure_kind = Some("connect".into());
    let v = judge(&rows, &closed(1, 4));
    assert_eq!(v.as_configured, Some(false));
    assert_eq!(
        v.reason.as_deref(),
        Some("server refused connections: 1 of 4 requests could not connect")
    );
}

#[test]
fn a_connection_dropped_before_any_response_byte_is_refused() {
    let mut rows: Vec<LoadRow> = (0..5).map(|i| row(i as f64, i as f64 + 1.0)).collect();
    rows[0].failure_kind = Some("reset".into());
    rows[1].failure_kind = Some("disconnect".into());
    rows[2].failure_kind = Some("connect".into());
    // A reset mid-response (a status was read) is not a refusal.
    rows[3].failure_kind = Some("reset".into());
    rows[3].status = Some(200);
    let v = judge(&rows, &closed(1, 5));
    assert_eq!(v.as_configured, Some(false));
    assert_eq!(
        v.reason.as_deref(),
        Some(
            "server refused connections: 1 of 5 requests could not connect, 2 of 5 requests had their \
             connection reset or closed before any response byte"
        )
    );
    rows.truncate(2);
    rows.extend((2..5).map(|i| row(i as f64, i as f64 + 1.0)));
    rows[0].status = Some(503);
    rows[1].failure_kind = None;
    assert_eq!(judge(&rows, &closed(1, 5)).as_configured, Some(true));
}

#[test]
fn an_open_loop_is_judged_against_its_schedule() {
    let open = LoadInputs {
        rule: LoadRule::Open {
            rate: 10.0,
            ramp_up_s: None,
        },
        client_limits: vec![],
        warmup_spans: vec![],
    };
    // Scheduled every 0.1 s; sent on time, then each 0.05 s late more than the one before.
    let on_time: Vec<LoadRow> = (0..11)
        .map(|i| row(i as f64 * 0.1, i as f64 * 0.1 + 1.0))
        .collect();
    let v = judge(&on_time, &open);
    assert_eq!((v.achieved_rate, v.rate_error_pct), (Some(10.0), Some(0.0)));
    assert_eq!(v.as_configured, Some(true));
    assert_eq!(v.delivered_concurrency, None);
    let late: Vec<LoadRow> = on_time
        .iter()
        .enumerate()
        .map(|(i, r)| LoadRow {
            start_s: r.start_s + i as f64 * 0.05,
            ..r.clone()
        })
        .collect();
    let v = judge(
        &late,
        &LoadInputs {
            client_limits: vec!["send lag p99 50.00 ms > 1 ms".into()],
            ..open
        },
    );
    assert_eq!(v.achieved_rate, Some(6.6667));
    assert_eq!(v.as_configured, Some(false));
    assert_eq!(
        v.reason.as_deref(),
        Some(
            "arrival process fell behind: sent 6.67 req/s against a schedule of 10.00 req/s; \
             client-limited: send lag p99 50.00 ms > 1 ms"
        )
    );
    assert!(v.warning().unwrap().contains("fell behind"));
}

#[test]
fn conversations_in_flight_include_think_time() {
    // Two conversations of two turns each, 1 s think time between turns: 2 conversations throughout.
    let mut rows = Vec::new();
    for c in 0..2 {
        rows.push(LoadRow {
            conversation: Some(c),
            ..row(0.0, 1.0)
        });
        rows.push(LoadRow {
            conversation: Some(c),
            ..row(2.0, 3.0)
        });
    }
    let mut inputs = closed(2, 4);
    let per_request = judge(&rows, &inputs);
    assert_eq!(per_request.delivered_concurrency, Some(1.0));
    inputs.rule = LoadRule::Closed {
        parallel: 2,
        number: 4,
        conversations: true,
    };
    let v = judge(&rows, &inputs);
    assert_eq!(v.delivered_concurrency, Some(2.0));
    assert_eq!(v.as_configured, Some(true));
}

/// Measured requests filling slots as warmup requests free them still run at the cap.
#[test]
fn warmup_requests_count_in_flight() {
    // Cap 2: a warmup request holds one slot until 1 s; the measured ones start at 0 and 1.
    let rows = vec![row(0.0, 2.0), row(1.0, 3.0), row(2.0, 4.0)];
    let mut inputs = closed(2, 3);
    assert_eq!(judge(&rows, &inputs).delivered_concurrency, Some(1.5));
    inputs.warmup_spans = vec![(-1.0, 1.0)];
    let v = judge(&rows, &inputs);
    assert_eq!(v.delivered_concurrency, Some(2.0));
    assert_eq!(v.as_configured, Some(true));
}

/// The streamed verdict, plateau and facts ([`judge_db`], over a database) against the in-memory ones
/// over the same rows read back ([`read_rows`]): random rows on a coarse time grid (equal times, missing
/// ends, ends before sends, conversations, failures of each kind, streamed and not), random rules and
/// warmup spans.
#[test]
fn the_streamed_verdict_and_plateau_equal_the_in_memory_ones() {
    use rand::{Rng, SeedableRng};
    use rusqlite::params;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(26);
    let dir = tempfile::tempdir().unwrap();
    // Cases that reached each outcome: the random rows must exercise every path, not only empty ones.
    let (mut windows, mut held, mut fell_short, mut conv_windows) = (0, 0, 0, 0);
    for case in 0..120 {
        let path = dir.path().join(format!("{case}.db"));
        let conn = crate::store::empty_for_test(&path);
        let rows = rng.random_range(0..80);
        for _ in 0..rows {
            let grid = |rng: &mut rand_chacha::ChaCha8Rng, lo: i32, hi: i32| {
                f64::from(rng.random_range(lo..hi)) / 8.0
            };
            let start = (rng.random_range(0..30) > 0).then(|| grid(&mut rng, 0, 80));
            let end = start
                .filter(|_| rng.random_range(0..10) > 0)
                .map(|s| s + grid(&mut rng, -1, 30));
            let sometimes = |rng: &mut rand_chacha::ChaCha8Rng, v: f64| {
                (rng.random_range(0..6) > 0).then_some(v)
            };
            let scheduled = start.and_then(|s| {
                let v = s - grid(&mut rng, 0, 3);
                sometimes(&mut rng, v)
            });
            let kind = ["", "connect", "reset", "disconnect", "http"][rng.random_range(0..5)];
            let failure = (!kind.is_empty()).then_some(kind);
            let status = {
                let v = 200.0;
                sometimes(&mut rng, v)
            }
            .map(|s| s as i64);
            let conversation = (rng.random_range(0..3) == 0).then(|| rng.random_range(0..6i64));
            let ttft = {
                let v = grid(&mut rng, 0, 16);
                sometimes(&mut rng, v)
            };
            let tpot = {
                let v = grid(&mut rng, 0, 4);
                sometimes(&mut rng, v)
            };
            let latency = {
                let v = grid(&mut rng, 0, 40);
                sometimes(&mut rng, v)
            };
            let completion = {
                let v = f64::from(rng.random_range(-1..5));
                sometimes(&mut rng, v)
            }
            .map(|t| t as i64);
            let prompt = {
                let v = f64::from(rng.random_range(0..50));
                sometimes(&mut rng, v)
            }
            .map(|t| t as i64);
            conn.execute(
                "INSERT INTO result (start_time, completed_time, scheduled_time, failure_kind, status_code, \
                 conversation_id, success, is_stream, first_chunk_latency, time_per_output_token, latency, \
                 completion_tokens, prompt_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    start,
                    end,
                    scheduled,
                    failure,
                    status,
                    conversation,
                    rng.random_bool(0.8),
                    rng.random_bool(0.7),
                    ttft,
                    tpot,
                    latency,
                    completion,
                    prompt
                ],
            )
            .unwrap();
        }
        let parallel = rng.random_range(1..6u64);
        let number = rng.random_range(1..12u64);
        let conversations = rng.random_bool(0.3);
        let ramp = (rng.random_bool(0.5)).then(|| f64::from(rng.random_range(0..20)) / 4.0);
        let rule = match rng.random_range(0..5) {
            0 => LoadRule::Paced {
                parallel,
                rate: 2.0,
                ramp_up_s: ramp,
            },
            1 => LoadRule::Open {
                rate: 3.0,
                ramp_up_s: ramp,
            },
            2 => LoadRule::Trace,
            3 => LoadRule::Unjudged("a shard"),
            _ => LoadRule::Closed {
                parallel,
                number,
                conversations,
            },
        };
        let plateau_rule = match rng.random_range(0..3) {
            0 => PlateauRule::Open { ramp_s: ramp },
            1 => PlateauRule::Unmeasured("a shard"),
            _ => PlateauRule::Closed {
                parallel,
                number,
                conversations,
            },
        };
        let warmup_spans: Vec<(f64, f64)> = (0..rng.random_range(0..4))
            .map(|_| {
                let s = f64::from(rng.random_range(-8..40)) / 8.0;
                (s, s + f64::from(rng.random_range(0..20)) / 8.0)
            })
            .collect();
        let inputs = LoadInputs {
            rule: rule.clone(),
            client_limits: vec![],
            warmup_spans: warmup_spans.clone(),
        };
        let in_memory = read_rows(&path).unwrap();
        let wanted = Wanted::of(&rule, &plateau_rule);
        assert_eq!(
            db::facts(&conn, &warmup_spans, &wanted).unwrap(),
            LoadFacts::of_rows(&in_memory, &warmup_spans, &wanted),
            "case {case}"
        );
        let scans = crate::metrics::sql_stats::open_for_scans(&path).unwrap();
        let (verdict, plateau) = judge_db(&scans, &inputs, &plateau_rule).unwrap();
        windows += usize::from(plateau.start_s.is_some());
        conv_windows += usize::from(plateau.start_s.is_some() && conversations);
        held += usize::from(verdict.as_configured == Some(true));
        fell_short += usize::from(verdict.as_configured == Some(false));
        assert_eq!(verdict, judge(&in_memory, &inputs), "case {case}: {rule:?}");
        assert_eq!(
            plateau,
            super::plateau(&in_memory, &plateau_rule, &warmup_spans),
            "case {case}: {plateau_rule:?}"
        );
    }
    assert!(
        windows >= 10 && conv_windows >= 2 && held >= 5 && fell_short >= 5,
        "windows {windows} (conversations {conv_windows}), held {held}, fell short {fell_short}"
    );
}

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

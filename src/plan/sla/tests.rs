//! Unit tests of `--sla-*` validation.

use super::*;

fn args(params: &str) -> SlaArgs {
    SlaArgs {
        sla_auto_tune: true,
        sla_variable: "parallel".into(),
        sla_params: Some(params.into()),
        sla_num_runs: 3,
        sla_upper_bound: 65536,
        sla_lower_bound: 1,
        ..SlaArgs::default()
    }
}

fn check(a: &SlaArgs) -> Result<Option<SlaPlan>, String> {
    SlaPlan::from_cli(a, &[1], &[-1.0], 5, false).map_err(|e| e.0)
}

#[test]
fn parses_groups_and_renders_them_as_python_does() {
    let plan = check(&args(
        r#"[{"p99_ttft": "<=500ms", "avg_tpot": "≤50"}, {"rps": ">=2"}]"#,
    ))
    .unwrap()
    .unwrap();
    assert_eq!(plan.groups.len(), 2);
    assert_eq!(plan.groups[0][0].1.text(), "<= 500 ms");
    assert_eq!(plan.groups[0][1].1.text(), "<= 50 ms");
    assert_eq!(
        plan.params_repr,
        "[{'p99_ttft': '<=500ms', 'avg_tpot': '≤50'}, {'rps': '>=2'}]"
    );
    assert_eq!(plan.start_value(), 1);
    assert_eq!(plan.number_for(3), 6);
}

#[test]
fn bad_input_names_the_flag() {
    for (params, want) in [
        (r#"{"p99_ttft": "<=5"}"#, "--sla-params must be a JSON list"),
        (r#"[{"p98_ttft": "<=5"}]"#, "unknown SLA metric 'p98_ttft'"),
        (r#"[{"p99_ttft": "=5"}]"#, "Invalid SLA param format"),
        (r#"[{"p99_ttft": 5}]"#, "Invalid SLA param format"),
        ("[]", "at least one non-empty"),
        ("[{}]", "non-empty criterion groups"),
        (r#"[{"tps": "max", "rps": ">=1"}]"#, "max/min requires"),
        ("[oops", "not valid JSON"),
    ] {
        let e = check(&args(params)).unwrap_err();
        assert!(
            e.contains("--sla-params") && e.contains(want),
            "{params}: {e}"
        );
    }
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_lower_bound = 10;
    a.sla_upper_bound = 5;
    assert!(check(&a).unwrap_err().contains("--sla-lower-bound"));
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_num_runs = 0;
    assert!(check(&a).unwrap_err().contains("--sla-num-runs"));
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_number_multiplier = Some(f64::INFINITY);
    assert!(check(&a).unwrap_err().contains("--sla-number-multiplier"));
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_confidence = Some(1.5);
    assert!(check(&a).unwrap_err().contains("--sla-confidence"));
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_params = None;
    assert!(check(&a).unwrap_err().contains("--sla-params"));
    let e = SlaPlan::from_cli(&args(r#"[{"p99_ttft": "<=5"}]"#), &[1], &[-1.0], 5, true)
        .unwrap_err()
        .0;
    assert!(e.contains("embedding"), "{e}");
}

#[test]
fn rate_starts_at_the_clamped_truncated_rate_and_rounds_half_to_even() {
    let mut a = args(r#"[{"rps": ">=1"}]"#);
    a.sla_variable = "rate".into();
    a.sla_number_multiplier = Some(0.5);
    let plan = SlaPlan::from_cli(&a, &[1], &[7.9], 0, false)
        .unwrap()
        .unwrap();
    assert_eq!(plan.start_value(), 7);
    assert_eq!(plan.number_for(5), 2);
    assert_eq!(plan.number_for(1), 1);
    let plan = SlaPlan::from_cli(&a, &[1], &[-1.0], 0, false)
        .unwrap()
        .unwrap();
    assert_eq!(plan.start_value(), 1);
    assert_eq!(plan.fixed_parallel, 65536);
}

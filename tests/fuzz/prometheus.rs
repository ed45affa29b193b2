//! The Prometheus text parser on arbitrary, mostly exposition-like text: no panic; what it accepts has a
//! sample in every family and survives a render-and-parse round trip; the analysis of any two accepted
//! texts (deltas, quantiles) never panics.

use llmperf::server_metrics::analyze::{counter_deltas, histogram_deltas};
use llmperf::server_metrics::prom::{parse, Exposition};
use proptest::prelude::*;

use crate::harness::fuzz;

/// Text made of exposition fragments, with arbitrary characters now and then.
fn text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        6 => prop::sample::select(vec![
            "vllm:num_requests_running", "vllm:ttft_seconds_bucket", "vllm:ttft_seconds_sum",
            "vllm:ttft_seconds_count", "c_total", "_x", "9bad", "{", "}", "le=\"0.5\"", "le=\"+Inf\"",
            "model_name=\"a,b \\\"q\\\" \\\\ \\n\"", ",", "=", "\"", " ", "  ", "\t", "1", "2.5", "-3e-2",
            "NaN", "+Inf", "-Inf", "1700000000000", "\n", "\r\n", "# TYPE vllm:ttft_seconds histogram\n",
            "# TYPE c_total counter\n", "# TYPE vllm:num_requests_running gauge\n", "# HELP x y\n",
            "# TYPE s summary\n", "s{quantile=\"0.5\"} 1\n", "s_sum 2\n", "# EOF\n",
        ])
        .prop_map(str::to_string),
        1 => any::<char>().prop_map(|c| c.to_string()),
    ];
    let fragments = prop::collection::vec(token, 0..12).prop_map(|t| t.concat() + "\n");
    let name = prop::sample::select(vec![
        "vllm:ttft_seconds_bucket",
        "vllm:ttft_seconds_sum",
        "vllm:ttft_seconds_count",
        "c_total",
        "vllm:num_requests_running",
        "s",
        "s_sum",
        "other:x",
    ]);
    let label = (
        prop::sample::select(vec!["le", "model_name", "quantile", "gpu"]),
        prop::sample::select(vec![
            "0.1",
            "0.5",
            "+Inf",
            "a,b",
            "q\\\"x\\\"",
            "\\n",
            "}{",
            "",
        ]),
    )
        .prop_map(|(k, v)| format!("{k}=\"{v}\""));
    let value = prop::sample::select(vec!["0", "1", "2.5", "1e3", "NaN", "+Inf", "-1"]);
    let sample = (
        name,
        prop::collection::vec(label, 0..3),
        value,
        any::<bool>(),
    )
        .prop_map(|(n, labels, v, comma)| {
            let set = if labels.is_empty() {
                String::new()
            } else {
                format!("{{{}{}}}", labels.join(","), if comma { "," } else { "" })
            };
            format!("{n}{set} {v}\n")
        });
    let line = prop_oneof![4 => sample, 1 => fragments];
    prop::collection::vec(line, 0..20).prop_map(|l| l.concat())
}

/// The samples of `e` written back as text (labels escaped).
fn render(e: &Exposition) -> String {
    let mut out = String::new();
    for f in &e.families {
        out.push_str(&format!("# TYPE {} {}\n", f.name, f.kind.name()));
        for s in &f.samples {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| {
                    let v = v
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    format!("{k}=\"{v}\"")
                })
                .collect();
            let value = if s.value.is_nan() {
                "NaN".to_string()
            } else if s.value.is_infinite() {
                if s.value > 0.0 { "+Inf" } else { "-Inf" }.to_string()
            } else {
                format!("{:?}", s.value)
            };
            out.push_str(&format!("{}{{{}}} {value}\n", s.name, labels.join(",")));
        }
    }
    out
}

fn same(a: &Exposition, b: &Exposition) -> bool {
    a.families.len() == b.families.len()
        && a.families.iter().zip(&b.families).all(|(x, y)| {
            x.name == y.name
                && x.samples.len() == y.samples.len()
                && x.samples.iter().zip(&y.samples).all(|(s, t)| {
                    s.name == t.name
                        && s.labels == t.labels
                        && (s.value == t.value || (s.value.is_nan() && t.value.is_nan()))
                })
        })
}

#[test]
fn prometheus_parser_never_panics_and_round_trips() {
    fuzz(
        "prometheus",
        || (text(), text()),
        |(a, b)| {
            let (pa, pb) = (parse(&a), parse(&b));
            for e in [&pa, &pb].into_iter().flatten() {
                prop_assert!(e.families.iter().all(|f| !f.samples.is_empty()));
                let back = parse(&render(e));
                prop_assert!(back.as_ref().is_ok_and(|r| same(e, r)), "{:?}", back);
            }
            if let (Ok(x), Ok(y)) = (&pa, &pb) {
                let _ = counter_deltas(x, y);
                for h in histogram_deltas(x, y) {
                    for q in [0.0, 0.5, 0.99, 1.0] {
                        let _ = h.quantile(q);
                    }
                    let _ = h.mean();
                }
            }
            Ok(())
        },
    );
}

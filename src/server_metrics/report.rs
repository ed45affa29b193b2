//! `server_metrics.json` and the extra summary keys, built from every endpoint's scrapes.
//!
//! Per endpoint the file holds every counter family's delta (per series too), every gauge series'
//! statistics and points, every histogram family's bucket deltas with P50/P90/P99 and their buckets, and
//! the final value of every other (untyped or summary) series, raw. The summary keys come from the known
//! names ([`super::known`]); the first endpoint exposing a meaning provides it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::analyze::{
    counter_deltas, gauge_stats, histogram_deltas, series_key, CounterDelta, HistogramDelta,
};
use super::known::{self, Combine};
use super::prom::Kind;
use super::scrape::EndpointLog;
use crate::pyjson::round;

/// One run's server-side results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerReport {
    /// The text of `server_metrics.json`.
    pub json: Value,
    /// Extra keys for the run's summary file, in order.
    pub summary_keys: Vec<(String, Value)>,
}

/// A number for JSON: an integer when whole (counters), else rounded to 4 decimals; `null` if not finite.
fn num(v: f64) -> Value {
    if !v.is_finite() {
        Value::Null
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(round(v, 4))
    }
}

/// Milliseconds from seconds, rounded to 2 decimals as evalscope's `(ms)` keys.
fn ms(v_s: f64) -> Value {
    if v_s.is_finite() {
        Value::from(round(v_s * 1000.0, 2))
    } else {
        Value::Null
    }
}

/// What one endpoint contributed.
struct Endpoint<'a> {
    log: &'a EndpointLog,
    counters: Vec<CounterDelta>,
    histograms: Vec<HistogramDelta>,
}

impl Endpoint<'_> {
    fn counter(&self, family: &str) -> Option<f64> {
        self.counters
            .iter()
            .find(|c| c.family == family)
            .map(|c| c.delta)
    }

    /// Σ of the deltas of `families`, when every one is exposed.
    fn counter_sum(&self, families: &[&str]) -> Option<f64> {
        families.iter().map(|f| self.counter(f)).sum()
    }

    /// A gauge family combined across its series at each scrape: `(t_s, value)`.
    fn combined(&self, family: &str, combine: Combine) -> Vec<(f64, f64)> {
        let mut at: BTreeMap<u64, (f64, Vec<f64>)> = BTreeMap::new();
        for (fam, points) in self.log.gauges.values() {
            if fam != family {
                continue;
            }
            for &(t, v) in points {
                at.entry(t.to_bits()).or_insert((t, Vec::new())).1.push(v);
            }
        }
        at.into_values()
            .map(|(t, vs)| {
                let v = match combine {
                    Combine::Sum => vs.iter().sum(),
                    Combine::Mean => vs.iter().sum::<f64>() / vs.len() as f64,
                    Combine::Max => vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                };
                (t, v)
            })
            .collect()
    }
}

/// Builds the report from every endpoint's log.
pub fn build(logs: &[EndpointLog], interval: Duration, client_output_tokens: f64) -> ServerReport {
    let endpoints: Vec<Endpoint<'_>> = logs
        .iter()
        .map(|log| {
            let complete = log.baseline_ok && log.final_ok;
            let (counters, histograms) = match (&log.first, &log.last) {
                (Some((_, a)), Some((_, b))) if complete => {
                    (counter_deltas(a, b), histogram_deltas(a, b))
                }
                _ => (Vec::new(), Vec::new()),
            };
            Endpoint {
                log,
                counters,
                histograms,
            }
        })
        .collect();
    let mut keys: Vec<(String, Value)> = Vec::new();
    let mut timeline = Map::new();
    counter_keys(&endpoints, client_output_tokens, &mut keys);
    gauge_keys(&endpoints, &mut keys, &mut timeline);
    histogram_keys(&endpoints, &mut keys);
    let json = json!({
        "interval_s": interval.as_secs_f64(),
        "endpoints": endpoints.iter().map(endpoint_json).collect::<Vec<_>>(),
        "summary": keys.iter().cloned().collect::<Map<String, Value>>(),
        "timeline": timeline,
    });
    ServerReport {
        json,
        summary_keys: keys,
    }
}

/// The first endpoint's value of `f`.
fn first_of<T>(endpoints: &[Endpoint<'_>], f: impl Fn(&Endpoint<'_>) -> Option<T>) -> Option<T> {
    endpoints.iter().find_map(f)
}

fn counter_keys(
    endpoints: &[Endpoint<'_>],
    client_output_tokens: f64,
    keys: &mut Vec<(String, Value)>,
) {
    let mut generation = None;
    for (key, families) in known::COUNTERS {
        let found = first_of(endpoints, |e| {
            families.iter().find_map(|g| e.counter_sum(g))
        });
        if let Some(v) = found {
            if *key == "Server Generation Tokens" {
                generation = Some(v);
            }
            keys.push((key.to_string(), num(v)));
        }
    }
    let cache = first_of(endpoints, |e| {
        known::PREFIX_CACHE
            .iter()
            .find_map(|(q, h)| Some((e.counter_sum(q)?, e.counter(h)?)))
    });
    if let Some((queries, hits)) = cache.filter(|c| c.0 > 0.0) {
        keys.push((
            "Server Prefix Cache Hit Rate (%)".into(),
            num(hits / queries * 100.0),
        ));
    }
    let spec = first_of(endpoints, |e| {
        known::SPEC_DECODE_PREFIXES.iter().find_map(|p| {
            Some((
                e.counter(&format!("{p}spec_decode_num_drafts_total"))?,
                e.counter(&format!("{p}spec_decode_num_draft_tokens_total"))?,
                e.counter(&format!("{p}spec_decode_num_accepted_tokens_total"))?,
            ))
        })
    });
    if let Some((drafts, draft_tokens, accepted)) = spec.filter(|s| s.0 > 0.0 && s.1 > 0.0) {
        keys.push((
            "Server Spec Decode Acceptance Rate".into(),
            num(accepted / draft_tokens),
        ));
        keys.push((
            "Server Spec Decode Mean Accepted Length".into(),
            num(1.0 + accepted / drafts),
        ));
    }
    let energy_j = first_of(endpoints, |e| {
        e.counter(known::ENERGY_COUNTER_MJ)
            .map(|mj| mj / 1000.0)
            .or_else(|| integrate(&e.combined(known::POWER_GAUGE, Combine::Sum)))
    });
    if let Some(j) = energy_j {
        keys.push(("Server GPU Energy (J)".into(), num(j)));
        let tokens = generation.unwrap_or(client_output_tokens);
        if tokens > 0.0 {
            keys.push((
                "Server GPU Energy per Output Token (J)".into(),
                num(j / tokens),
            ));
        }
    }
}

/// ∫ power dt over the scrapes (trapezoids), joules; `None` with fewer than two points.
fn integrate(points: &[(f64, f64)]) -> Option<f64> {
    (points.len() >= 2).then(|| {
        points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum()
    })
}

fn gauge_keys(
    endpoints: &[Endpoint<'_>],
    keys: &mut Vec<(String, Value)>,
    timeline: &mut Map<String, Value>,
) {
    for (stem, families, scale, combine) in known::GAUGES {
        let points = first_of(endpoints, |e| {
            families
                .iter()
                .map(|f| e.combined(f, *combine))
                .find(|p| !p.is_empty())
        });
        let Some(points) = points else { continue };
        let scaled: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (t, v * scale)).collect();
        if let Some(stats) = gauge_stats(&scaled) {
            keys.push((format!("Server Avg {stem}"), num(stats.mean)));
            keys.push((format!("Server Max {stem}"), num(stats.max)));
        }
        let pts: Vec<Value> = scaled
            .iter()
            .map(|&(t, v)| json!([round(t, 6), num(v)]))
            .collect();
        timeline.insert(stem.to_string(), Value::Array(pts));
    }
}

fn histogram_keys(endpoints: &[Endpoint<'_>], keys: &mut Vec<(String, Value)>) {
    for (stem, families) in known::HISTOGRAMS {
        let found = endpoints.iter().find_map(|e| {
            families.iter().find_map(|f| {
                e.histograms
                    .iter()
                    .find(|h| h.family == *f && h.count > 0.0)
            })
        });
        let Some(h) = found else { continue };
        if let Some(mean) = h.mean() {
            keys.push((format!("Server Avg {stem} (ms)"), ms(mean)));
        }
        for (label, q) in known::QUANTILES {
            if let Some(est) = h.quantile(*q) {
                keys.push((format!("Server {label} {stem} (ms)"), ms(est.value)));
                keys.push((
                    format!("Server {label} {stem} Bucket Error (ms)"),
                    ms(est.error()),
                ));
            }
        }
    }
}

fn endpoint_json(e: &Endpoint<'_>) -> Value {
    let log = e.log;
    let counters: Map<String, Value> = e
        .counters
        .iter()
        .map(|c| {
            let series: Vec<Value> = c
                .series
                .iter()
                .map(|s| json!({"series": s.series, "start": num(s.start), "end": num(s.end), "delta": num(s.delta)}))
                .collect();
            (c.family.clone(), json!({"delta": num(c.delta), "series": series}))
        })
        .collect();
    let gauges: Map<String, Value> = log
        .gauges
        .iter()
        .filter_map(|(key, (family, points))| {
            let s = gauge_stats(points)?;
            let pts: Vec<Value> = points
                .iter()
                .map(|&(t, v)| json!([round(t, 6), num(v)]))
                .collect();
            Some((
                key.clone(),
                json!({"family": family, "mean": num(s.mean), "min": num(s.min), "max": num(s.max),
                       "last": num(s.last), "samples": s.samples, "points": pts}),
            ))
        })
        .collect();
    let histograms: Map<String, Value> = e
        .histograms
        .iter()
        .map(|h| {
            let quantiles: Map<String, Value> = known::QUANTILES
                .iter()
                .filter_map(|(label, q)| {
                    let est = h.quantile(*q)?;
                    Some((
                        label.to_lowercase(),
                        json!({"value": num(est.value), "bucket": [num(est.lower), num(est.upper)], "error": num(est.error())}),
                    ))
                })
                .collect();
            let buckets: Vec<Value> = h.buckets.iter().map(|&(le, c)| json!([num(le), num(c)])).collect();
            (
                h.family.clone(),
                json!({"count": num(h.count), "sum": num(h.sum), "mean": h.mean().map_or(Value::Null, num),
                       "buckets": buckets, "quantiles": quantiles}),
            )
        })
        .collect();
    let other: Map<String, Value> = log
        .last
        .iter()
        .flat_map(|(_, e)| &e.families)
        .filter(|f| matches!(f.kind, Kind::Untyped | Kind::Summary))
        .flat_map(|f| {
            f.samples.iter().map(move |s| {
                (
                    series_key(s),
                    json!({"type": f.kind.name(), "value": num(s.value)}),
                )
            })
        })
        .collect();
    json!({
        "url": log.url.as_str(),
        "scrapes": log.attempts,
        "failed_scrapes": log.failures,
        "last_error": log.last_error,
        "baseline_scrape": log.baseline_ok,
        "final_scrape": log.final_ok,
        "window_s": match (&log.first, &log.last) {
            (Some((a, _)), Some((b, _))) => json!([round(*a, 6), round(*b, 6)]),
            _ => Value::Null,
        },
        "counters": counters,
        "gauges": gauges,
        "histograms": histograms,
        "other": other,
    })
}

/// The client-vs-server keys: the client's average TTFT minus the server's (network, HTTP and client
/// overhead), present when both are known.
pub fn client_vs_server(client_avg_ttft_ms: f64, keys: &[(String, Value)]) -> Vec<(String, Value)> {
    let server = keys
        .iter()
        .find(|(k, _)| k == "Server Avg TTFT (ms)")
        .and_then(|(_, v)| v.as_f64());
    match server {
        Some(s) if client_avg_ttft_ms > 0.0 => vec![(
            "TTFT Client Overhead (ms)".to_string(),
            Value::from(round(client_avg_ttft_ms - s, 2)),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::Url;

    use super::super::prom::parse;
    use super::*;

    fn log(url: &str, texts: &[(f64, &str)]) -> EndpointLog {
        let mut log = EndpointLog {
            url: Url::parse(url).unwrap(),
            attempts: texts.len() as u64,
            failures: 0,
            last_error: None,
            first: None,
            last: None,
            baseline_ok: true,
            final_ok: true,
            gauges: BTreeMap::new(),
        };
        for &(t, text) in texts {
            let e = parse(text).unwrap();
            for f in e.families.iter().filter(|f| f.kind == Kind::Gauge) {
                for s in &f.samples {
                    log.gauges
                        .entry(series_key(s))
                        .or_insert_with(|| (f.name.clone(), Vec::new()))
                        .1
                        .push((t, s.value));
                }
            }
            log.first.get_or_insert((t, e.clone()));
            log.last = Some((t, e));
        }
        log
    }

    #[test]
    fn spec_decode_prefix_cache_and_dcgm_energy() {
        let engine = log(
            "http://e/metrics",
            &[
                (0.0, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 100\n# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total 10\n# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total 30\n# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total 20\n# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total 0\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total 0\n"),
                (2.0, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 300\n# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total 60\n# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total 180\n# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total 110\n# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total 400\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total 100\n"),
            ],
        );
        let gpu = log(
            "http://g:9400/metrics",
            &[
                (0.0, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 50\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 70\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 100\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 100\n"),
                (1.0, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 90\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 90\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 300\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 300\n"),
            ],
        );
        let r = build(&[engine, gpu], Duration::from_secs(1), 0.0);
        let get = |k: &str| {
            r.summary_keys
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_f64().unwrap())
        };
        assert_eq!(get("Server Generation Tokens"), Some(200.0));
        // 90 accepted of 150 drafted tokens in 50 drafts: rate 0.6, mean accepted length 1 + 90/50.
        assert_eq!(get("Server Spec Decode Acceptance Rate"), Some(0.6));
        assert_eq!(get("Server Spec Decode Mean Accepted Length"), Some(2.8));
        assert_eq!(get("Server Prefix Cache Hit Rate (%)"), Some(25.0));
        // GPU utilisation: mean over GPUs at each scrape (60, then 90); power summed (200 W, 600 W).
        assert_eq!(get("Server Avg GPU Utilization (%)"), Some(75.0));
        assert_eq!(get("Server Max GPU Power (W)"), Some(600.0));
        // Energy: ∫ power = (200 + 600) / 2 · 1 s = 400 J over 200 generated tokens.
        assert_eq!(get("Server GPU Energy (J)"), Some(400.0));
        assert_eq!(get("Server GPU Energy per Output Token (J)"), Some(2.0));
        assert_eq!(r.json["endpoints"].as_array().unwrap().len(), 2);
        assert!(r.json["timeline"]["GPU Power (W)"].is_array());
    }

    #[test]
    fn an_endpoint_without_baseline_gives_no_deltas_but_gauges() {
        let mut l = log(
            "http://e/metrics",
            &[
                (0.0, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 2\n# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 5\n"),
                (1.0, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 4\n# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 9\n"),
            ],
        );
        let complete = build(std::slice::from_ref(&l), Duration::from_secs(1), 0.0);
        assert!(complete
            .summary_keys
            .contains(&("Server Prompt Tokens".into(), Value::from(4))));
        l.baseline_ok = false;
        let r = build(&[l], Duration::from_secs(1), 0.0);
        assert!(r
            .summary_keys
            .iter()
            .all(|(k, _)| k != "Server Prompt Tokens"));
        assert!(r
            .summary_keys
            .contains(&("Server Avg Running Requests".into(), Value::from(3))));
    }
}

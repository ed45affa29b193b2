//! `--goodput`: service-level objectives per request (vLLM's `NAME:MS` syntax) and the summary keys they
//! add: `Goodput (req/s)` (requests that met every SLO, per second of the run), `SLO Attainment (%)`
//! (their share of all measured requests, failures included) and one `<NAME> SLO Attainment (%)` per SLO.
//!
//! Per request (successful ones only; a failed request meets no SLO): `ttft` is `first_chunk_latency`,
//! `tpot` is `time_per_output_token`, `itl` the request's largest gap between two output chunks (0 with
//! fewer than two), `e2el` its `latency`; each in milliseconds, met when ≤ the objective.

use crate::error::UsageError;

/// One SLO metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// Largest inter-token gap.
    Itl,
    /// End-to-end latency.
    E2el,
}

impl SloMetric {
    /// The key name (`TTFT`, `TPOT`, `ITL`, `E2EL`).
    pub fn label(self) -> &'static str {
        match self {
            SloMetric::Ttft => "TTFT",
            SloMetric::Tpot => "TPOT",
            SloMetric::Itl => "ITL",
            SloMetric::E2el => "E2EL",
        }
    }

    /// The `--goodput` name (`ttft`, …).
    pub fn name(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Itl => "itl",
            SloMetric::E2el => "e2el",
        }
    }
}

/// The SLOs of `--goodput`, in the order given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoodputSlos {
    /// `(metric, objective in ms)`.
    pub slos: Vec<(SloMetric, f64)>,
}

impl GoodputSlos {
    /// Parses `--goodput` items; `None` when none were given. Errors name the flag.
    pub fn parse(items: &[String]) -> Result<Option<GoodputSlos>, UsageError> {
        if items.is_empty() {
            return Ok(None);
        }
        let mut slos: Vec<(SloMetric, f64)> = Vec::new();
        for item in items {
            let Some((name, ms)) = item.split_once(':') else {
                return Err(UsageError(format!(
                    "--goodput {item:?}: expected NAME:MS, e.g. ttft:500 (names: ttft, tpot, itl, e2el)"
                )));
            };
            let metric = match name.trim() {
                "ttft" => SloMetric::Ttft,
                "tpot" => SloMetric::Tpot,
                "itl" => SloMetric::Itl,
                "e2el" => SloMetric::E2el,
                other => {
                    return Err(UsageError(format!(
                        "--goodput {item:?}: unknown SLO {other:?}; use ttft, tpot, itl or e2el"
                    )))
                }
            };
            let ms: f64 = match ms.trim().parse() {
                Ok(v) if v >= 0.0 && f64::is_finite(v) => v,
                _ => {
                    return Err(UsageError(format!(
                        "--goodput {item:?}: the objective must be a number of milliseconds ≥ 0"
                    )))
                }
            };
            if slos.iter().any(|(m, _)| *m == metric) {
                return Err(UsageError(format!("--goodput: {name} is given twice")));
            }
            slos.push((metric, ms));
        }
        Ok(Some(GoodputSlos { slos }))
    }
}

/// One request's values, milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestTimes {
    /// TTFT.
    pub ttft_ms: f64,
    /// TPOT.
    pub tpot_ms: f64,
    /// Largest inter-token gap.
    pub max_itl_ms: f64,
    /// Latency.
    pub e2el_ms: f64,
}

impl RequestTimes {
    fn get(&self, m: SloMetric) -> f64 {
        match m {
            SloMetric::Ttft => self.ttft_ms,
            SloMetric::Tpot => self.tpot_ms,
            SloMetric::Itl => self.max_itl_ms,
            SloMetric::E2el => self.e2el_ms,
        }
    }
}

/// Running counts of requests meeting the SLOs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoodputCounter {
    slos: GoodputSlos,
    total: u64,
    met_all: u64,
    met_each: Vec<u64>,
}

/// The goodput keys of a summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoodputSummary {
    /// The objectives, ms.
    pub slos: Vec<(SloMetric, f64)>,
    /// `Goodput (req/s)`.
    pub goodput_rps: f64,
    /// `SLO Attainment (%)`: share of measured requests meeting every SLO.
    pub attainment_pct: f64,
    /// Per SLO, the share meeting it.
    pub attainment_each_pct: Vec<f64>,
    /// Requests meeting every SLO.
    pub good_requests: u64,
}

impl GoodputCounter {
    /// A counter for `slos`.
    pub fn new(slos: GoodputSlos) -> Self {
        let n = slos.slos.len();
        GoodputCounter {
            slos,
            total: 0,
            met_all: 0,
            met_each: vec![0; n],
        }
    }

    /// Counts one measured request (`None`: it failed).
    pub fn add(&mut self, times: Option<RequestTimes>) {
        self.total += 1;
        let Some(t) = times else { return };
        let mut all = true;
        for (i, (m, slo)) in self.slos.slos.iter().enumerate() {
            let ok = t.get(*m) <= *slo;
            self.met_each[i] += u64::from(ok);
            all &= ok;
        }
        self.met_all += u64::from(all);
    }

    /// The summary keys for a run of `duration_s` (rounded as the summary rounds: 4 and 2 places).
    pub fn summary(&self, duration_s: f64) -> GoodputSummary {
        let pct = |n: u64| {
            if self.total == 0 {
                0.0
            } else {
                crate::pyjson::round(n as f64 * 100.0 / self.total as f64, 2)
            }
        };
        GoodputSummary {
            slos: self.slos.slos.clone(),
            goodput_rps: if duration_s > 0.0 {
                crate::pyjson::round(self.met_all as f64 / duration_s, 4)
            } else {
                0.0
            },
            attainment_pct: pct(self.met_all),
            attainment_each_pct: self.met_each.iter().map(|n| pct(*n)).collect(),
            good_requests: self.met_all,
        }
    }
}

impl GoodputSummary {
    /// The summary's extra keys, in order.
    pub fn keys(&self) -> Vec<(String, serde_json::Value)> {
        let mut slos = serde_json::Map::new();
        for (m, ms) in &self.slos {
            slos.insert(m.name().to_string(), (*ms).into());
        }
        let mut out = vec![
            (
                "Goodput SLOs (ms)".to_string(),
                serde_json::Value::Object(slos),
            ),
            ("Goodput (req/s)".to_string(), self.goodput_rps.into()),
            ("SLO Attainment (%)".to_string(), self.attainment_pct.into()),
        ];
        for ((m, _), pct) in self.slos.iter().zip(&self.attainment_each_pct) {
            out.push((format!("{} SLO Attainment (%)", m.label()), (*pct).into()));
        }
        out
    }
}

/// The summary keys of [`GoodputSummary::keys`], in order (their names depend on the SLOs given).
impl serde::Serialize for GoodputSummary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vllm_syntax_and_names_the_flag() {
        let s = GoodputSlos::parse(&["ttft:500".into(), "tpot:50".into()])
            .unwrap()
            .unwrap();
        assert_eq!(
            s.slos,
            vec![(SloMetric::Ttft, 500.0), (SloMetric::Tpot, 50.0)]
        );
        assert!(GoodputSlos::parse(&[]).unwrap().is_none());
        for bad in ["ttft", "foo:1", "ttft:-1", "ttft:x"] {
            assert!(GoodputSlos::parse(&[bad.into()])
                .unwrap_err()
                .to_string()
                .contains("--goodput"));
        }
    }

    #[test]
    fn counts_joint_and_each() {
        let slos = GoodputSlos::parse(&["ttft:100".into(), "e2el:1000".into()])
            .unwrap()
            .unwrap();
        let mut c = GoodputCounter::new(slos);
        let t = |ttft_ms, e2el_ms| {
            Some(RequestTimes {
                ttft_ms,
                e2el_ms,
                ..Default::default()
            })
        };
        c.add(t(50.0, 500.0));
        c.add(t(150.0, 500.0));
        c.add(t(50.0, 1500.0));
        c.add(None);
        let s = c.summary(2.0);
        assert_eq!(s.good_requests, 1);
        assert_eq!(s.goodput_rps, 0.5);
        assert_eq!(s.attainment_pct, 25.0);
        assert_eq!(s.attainment_each_pct, vec![50.0, 50.0]);
    }
}

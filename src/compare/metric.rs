//! The metrics `llmperf compare` reports and gates on, named as evalscope's `--sla-params` names them
//! (`avg_ttft`, `p99_ttft`, `rps`, `tps`, …) plus the ITL ones (`avg_itl`, `p99_itl`): a quantity (TTFT,
//! TPOT, ITL, latency, request or token throughput) and a statistic (mean, percentile, or the run's own
//! figure).

use std::fmt;

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quantity {
    /// Time to first token (ms), one value per request.
    Ttft,
    /// Time per output token (ms), one value per streamed request with more than one token.
    Tpot,
    /// Inter-token latency (ms), every gap of every request.
    Itl,
    /// End-to-end latency (s), one value per request.
    Latency,
    /// Request throughput (req/s), one value per run.
    Rps,
    /// Output token throughput (tok/s), one value per run.
    Tps,
}

impl Quantity {
    const ALL: [Quantity; 6] = [
        Quantity::Ttft,
        Quantity::Tpot,
        Quantity::Itl,
        Quantity::Latency,
        Quantity::Rps,
        Quantity::Tps,
    ];

    /// The name's stem (`ttft`), and the whole name of a run-level quantity (`rps`).
    pub fn key(self) -> &'static str {
        match self {
            Quantity::Ttft => "ttft",
            Quantity::Tpot => "tpot",
            Quantity::Itl => "itl",
            Quantity::Latency => "latency",
            Quantity::Rps => "rps",
            Quantity::Tps => "tps",
        }
    }

    /// The unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            Quantity::Ttft | Quantity::Tpot | Quantity::Itl => "ms",
            Quantity::Latency => "s",
            Quantity::Rps => "req/s",
            Quantity::Tps => "tok/s",
        }
    }

    /// A throughput (one value per run, higher is better) rather than a latency.
    pub fn is_run_level(self) -> bool {
        matches!(self, Quantity::Rps | Quantity::Tps)
    }

    /// Whether an increase is a regression (latencies) rather than an improvement (throughputs).
    pub fn higher_is_worse(self) -> bool {
        !self.is_run_level()
    }
}

/// How the values of a run are summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Statistic {
    /// The mean (evalscope's `Avg …`).
    Mean,
    /// A percentile, in percent (evalscope's nearest rank).
    Percentile(u32),
    /// The run's own figure (throughputs).
    Run,
}

/// One metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Metric {
    /// What is measured.
    pub quantity: Quantity,
    /// How a run's values are summarised.
    pub statistic: Statistic,
}

/// The percentiles evalscope reports in a run's percentile table, the ones a name may use.
pub const PERCENTILES: [u32; 9] = [1, 5, 10, 25, 50, 75, 90, 95, 99];

/// The percentiles shown by default.
const SHOWN_PERCENTILES: [u32; 3] = [50, 90, 99];

impl Metric {
    /// `quantity`'s mean.
    pub const fn mean(quantity: Quantity) -> Metric {
        Metric {
            quantity,
            statistic: Statistic::Mean,
        }
    }

    /// `quantity`'s `p`-th percentile.
    pub const fn percentile(quantity: Quantity, p: u32) -> Metric {
        Metric {
            quantity,
            statistic: Statistic::Percentile(p),
        }
    }

    /// The metric called `name`, `None` for any other name.
    pub fn parse(name: &str) -> Option<Metric> {
        if let Some(q) = Quantity::ALL
            .iter()
            .find(|q| q.is_run_level() && q.key() == name)
        {
            return Some(Metric {
                quantity: *q,
                statistic: Statistic::Run,
            });
        }
        let (stat, key) = name.split_once('_')?;
        let quantity = *Quantity::ALL
            .iter()
            .find(|q| !q.is_run_level() && q.key() == key)?;
        let statistic = match stat {
            "avg" => Statistic::Mean,
            p => {
                let p: u32 = p.strip_prefix('p')?.parse().ok()?;
                if !PERCENTILES.contains(&p) {
                    return None;
                }
                Statistic::Percentile(p)
            }
        };
        Some(Metric {
            quantity,
            statistic,
        })
    }

    /// Every name [`Metric::parse`] takes, for an error message.
    pub fn names_help() -> String {
        let pcts: Vec<String> = PERCENTILES.iter().map(|p| format!("p{p}")).collect();
        format!(
            "avg_X or {}_X with X one of ttft, tpot, itl, latency (e.g. avg_ttft, p99_ttft); rps; tps",
            pcts.join("/")
        )
    }

    /// The metrics a comparison shows: mean, p50, p90 and p99 of each latency, then the throughputs.
    pub fn shown() -> Vec<Metric> {
        let mut out = Vec::new();
        for q in Quantity::ALL.iter().filter(|q| !q.is_run_level()) {
            out.push(Metric::mean(*q));
            out.extend(SHOWN_PERCENTILES.iter().map(|p| Metric::percentile(*q, *p)));
        }
        out.extend(
            Quantity::ALL
                .iter()
                .filter(|q| q.is_run_level())
                .map(|q| Metric {
                    quantity: *q,
                    statistic: Statistic::Run,
                }),
        );
        out
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.statistic {
            Statistic::Mean => write!(f, "avg_{}", self.quantity.key()),
            Statistic::Percentile(p) => write!(f, "p{p}_{}", self.quantity.key()),
            Statistic::Run => f.write_str(self.quantity.key()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_follow_sla_params() {
        for m in Metric::shown() {
            assert_eq!(Metric::parse(&m.to_string()), Some(m));
        }
        // evalscope's --sla-params names, plus ITL.
        for name in [
            "avg_latency",
            "avg_ttft",
            "avg_tpot",
            "rps",
            "tps",
            "p99_latency",
            "p99_ttft",
            "p90_ttft",
            "p50_ttft",
            "p99_tpot",
            "p90_tpot",
            "p50_tpot",
            "avg_itl",
            "p99_itl",
            "p95_ttft",
        ] {
            assert_eq!(
                Metric::parse(name).map(|m| m.to_string()),
                Some(name.into())
            );
        }
        for bad in [
            "p98_ttft", "avg_rps", "p99", "ttft", "max_ttft", "p99_foo", "",
        ] {
            assert_eq!(Metric::parse(bad), None, "{bad}");
        }
        assert!(Metric::parse("p99_ttft")
            .unwrap()
            .quantity
            .higher_is_worse());
        assert!(!Metric::parse("tps").unwrap().quantity.higher_is_worse());
    }
}

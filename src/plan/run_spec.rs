//! A run of the plan as types: how it releases its requests ([`Load`]) and what it is within its
//! invocation ([`RunRole`], [`RunSpec`]). What it sends is [`super::Workload`].
//!
//! evalscope spells the modes as sentinels: `parallel` is −1 in open loop, `rate` −1 when a run is not
//! paced. Those values exist only where evalscope's files are read or written: [`Load::parallel_as_written`]
//! and [`Load::rate_as_written`] translate for the writers, [`Load::from_written`] for the readers. Past the
//! plan, a concurrency is a [`NonZeroUsize`] and a rate a [`Rate`].

use std::num::NonZeroUsize;

use super::sla::Variable;
use crate::scenario::config::Variant;

/// A request rate: finite and greater than 0, in requests per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    /// `per_s` as a rate, `None` unless it is finite and > 0.
    pub fn new(per_s: f64) -> Option<Rate> {
        (per_s.is_finite() && per_s > 0.0).then_some(Rate(per_s))
    }

    /// Requests per second.
    pub fn per_s(self) -> f64 {
        self.0
    }
}

/// How a run releases its requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// At most `parallel` requests in flight (`--multi-turn`: conversations; AgentX: sessions), each
    /// released as a slot frees, or with `pacing` at its arrival time on a seeded schedule (evalscope's
    /// closed loop paced by `--rate`).
    Closed {
        /// The concurrency cap.
        parallel: NonZeroUsize,
        /// `--rate` in closed loop: arrivals at this rate, still capped.
        pacing: Option<Rate>,
    },
    /// `--open-loop`: requests released at their arrival times on a seeded schedule at `rate` (Poisson,
    /// or the `--arrival` shape), with no cap.
    Open {
        /// The arrival rate.
        rate: Rate,
    },
    /// `--open-loop` over a trace that brings its own arrival times (`workload_trace`, `mooncake_trace`,
    /// `burstgpt_trace`, `azure_trace`): the trace's offsets are the schedule.
    Trace {
        /// `--rate` as typed: it only names the run (its folder and the run's arguments file), as in
        /// evalscope; −1 when left at its default.
        rate_as_typed: f64,
        /// `--number` as typed: the run's folder keeps it (as evalscope's does) although the run replays
        /// only as many requests as the trace holds.
        number_as_typed: u64,
    },
}

impl Load {
    /// The concurrency cap (closed loop), `None` in open loop.
    pub fn parallel(&self) -> Option<NonZeroUsize> {
        match self {
            Load::Closed { parallel, .. } => Some(*parallel),
            Load::Open { .. } | Load::Trace { .. } => None,
        }
    }

    /// The rate of the run's seeded arrival schedule: open loop, or a closed loop paced by `--rate`.
    pub fn schedule_rate(&self) -> Option<Rate> {
        match self {
            Load::Closed { pacing, .. } => *pacing,
            Load::Open { rate } => Some(*rate),
            Load::Trace { .. } => None,
        }
    }

    /// Open loop (no concurrency cap), on a seeded schedule or a trace's.
    pub fn is_open(&self) -> bool {
        !matches!(self, Load::Closed { .. })
    }

    /// `parallel` as evalscope writes it (the run's arguments file, `Number of concurrency`): −1 in open loop.
    pub fn parallel_as_written(&self) -> i64 {
        self.parallel().map_or(-1, |p| p.get() as i64)
    }

    /// `rate` as evalscope writes it: −1 when not paced, the typed value for a trace.
    pub fn rate_as_written(&self) -> f64 {
        match self {
            Load::Closed { pacing, .. } => pacing.map_or(-1.0, Rate::per_s),
            Load::Open { rate } => rate.per_s(),
            Load::Trace { rate_as_typed, .. } => *rate_as_typed,
        }
    }

    /// The load an evalscope run folder records (`parallel`, `rate`, `number`, `open_loop` of its
    /// arguments); `None` when the values name no load. An open loop without a rate replayed a trace.
    pub fn from_written(parallel: i64, rate: f64, number: u64, open_loop: bool) -> Option<Load> {
        if open_loop || parallel == -1 {
            return Some(match Rate::new(rate) {
                Some(rate) => Load::Open { rate },
                None => Load::Trace {
                    rate_as_typed: rate,
                    number_as_typed: number,
                },
            });
        }
        let parallel = NonZeroUsize::new(usize::try_from(parallel).ok()?)?;
        Some(Load::Closed {
            parallel,
            pacing: Rate::new(rate),
        })
    }
}

/// What a run is within its invocation (which also decides where its folder goes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRole {
    /// A point of the `--parallel`/`--rate` × `--number` sweep.
    Sweep,
    /// One run of an SLA auto-tune probe: the searched variable at `value`, its `iteration`-th run.
    SlaProbe {
        /// The searched variable.
        variable: Variable,
        /// Its value.
        value: i64,
        /// Which run of the probe (from 1).
        iteration: usize,
    },
    /// One `--parallel` value of an AgentX replay.
    Agentx {
        /// The scenario variant.
        variant: Variant,
    },
    /// `--repeat`: repeat `repeat` (≥ 2) of the sweep's point `point` (its index among the sweep's runs).
    Repeat {
        /// Which repeat (2, 3, …; repeat 1 is the [`RunRole::Sweep`] run itself).
        repeat: u32,
        /// The point's index in the sweep.
        point: usize,
    },
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Measured requests (conversations for `--multi-turn`).
    pub number: u64,
    /// How its requests are released.
    pub load: Load,
    /// Warmup requests sent first, not measured.
    pub warmup: u64,
    /// `--dataset-offset` advanced by the `--number` of every earlier run.
    pub dataset_offset: u64,
    /// What the run is within its invocation.
    pub role: RunRole,
}

impl RunSpec {
    /// Warmup plus measured requests.
    pub fn total(&self) -> u64 {
        self.number + self.warmup
    }

    /// The dispatcher's concurrency cap: at most the run's requests (more workers would only idle); an
    /// open-loop run's client keeps up to `open_cap` connections.
    pub fn workers(&self, open_cap: usize) -> usize {
        match self.load.parallel() {
            Some(p) => p.get().min(self.total().max(1) as usize),
            None => open_cap,
        }
    }

    /// The run as a user names it in flags: `--parallel P --number N` or `--rate R --number N`.
    pub fn as_flags(&self) -> String {
        match self.load {
            Load::Closed { parallel, .. } => {
                format!("--parallel {parallel} --number {}", self.number)
            }
            Load::Open { .. } | Load::Trace { .. } => format!(
                "--rate {} --number {}",
                crate::pyjson::float_repr(self.load.rate_as_written()),
                self.number
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    #[test]
    fn rates_are_positive_and_finite() {
        assert_eq!(Rate::new(2.5).map(Rate::per_s), Some(2.5));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Rate::new(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn written_values_round_trip() {
        let loads = [
            Load::Closed {
                parallel: nz(4),
                pacing: None,
            },
            Load::Closed {
                parallel: nz(2),
                pacing: Rate::new(5.0),
            },
            Load::Open {
                rate: Rate::new(10.0).unwrap(),
            },
            Load::Trace {
                rate_as_typed: -1.0,
                number_as_typed: 1000,
            },
        ];
        for load in loads {
            let open = load.is_open();
            let (parallel, rate) = (load.parallel_as_written(), load.rate_as_written());
            assert_eq!(Load::from_written(parallel, rate, 1000, open), Some(load));
        }
        assert_eq!(loads[0].parallel_as_written(), 4);
        assert_eq!(loads[0].rate_as_written(), -1.0);
        assert_eq!(loads[2].parallel_as_written(), -1);
        assert_eq!(Load::from_written(0, -1.0, 10, false), None);
    }

    #[test]
    fn workers_never_exceed_the_requests() {
        let spec = |load, number| RunSpec {
            number,
            load,
            warmup: 1,
            dataset_offset: 0,
            role: RunRole::Sweep,
        };
        let closed = Load::Closed {
            parallel: nz(8),
            pacing: None,
        };
        assert_eq!(spec(closed, 3).workers(1024), 4);
        assert_eq!(spec(closed, 30).workers(1024), 8);
        let open = Load::Open {
            rate: Rate::new(1.0).unwrap(),
        };
        assert_eq!(spec(open, 3).workers(1024), 1024);
    }
}

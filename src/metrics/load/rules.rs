//! The rules a run's load is judged by and its plateau window is found by, from how the run releases its
//! requests (docs/load-verdict.md); below both the verdict ([`super::judge_facts`]) and the plateau
//! ([`super::plateau`]), and the facts they need ([`super::facts`]).

/// The rule a run's load is judged by, from how it releases its requests.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadRule {
    /// Closed loop: `parallel` requests (`conversations`: conversations of a multi-turn run) kept in flight,
    /// `number` measured requests in all (or conversations' requests).
    Closed {
        /// `--parallel`.
        parallel: u64,
        /// `--number` (measured requests of the run).
        number: u64,
        /// Count conversations in flight (multi-turn: think time between turns is part of a conversation).
        conversations: bool,
    },
    /// Closed loop paced by `--rate`: the rate is the rule while the cap never binds.
    Paced {
        /// `--parallel`.
        parallel: u64,
        /// `--rate`.
        rate: f64,
        /// `--ramp-up` (seconds), if any.
        ramp_up_s: Option<f64>,
    },
    /// Open loop at `--rate` (Poisson or `--arrival`, `--ramp-up` included): the send times against the
    /// drawn schedule.
    Open {
        /// `--rate`.
        rate: f64,
        /// `--ramp-up` (seconds), if any.
        ramp_up_s: Option<f64>,
    },
    /// A trace's own arrival times: the send times against the trace's.
    Trace,
    /// No rule applies (the reason, in words).
    Unjudged(&'static str),
}

/// Requests in flight, as a share of `--parallel`, from which a closed loop is on its plateau.
pub const PLATEAU_LEVEL: f64 = 0.95;

/// The in-flight count at which `slots` are taken as full ([`PLATEAU_LEVEL`] of them): the level the
/// verdict's `Load Reached After (s)` and ramp-up and the closed-loop plateau look for, and the level the
/// facts are asked to measure ([`super::Wanted`]), computed here once so both always agree.
pub fn full_level(slots: u64) -> f64 {
    PLATEAU_LEVEL * slots as f64
}

/// How a run's plateau window is found.
#[derive(Debug, Clone, PartialEq)]
pub enum PlateauRule {
    /// Closed loop (paced or not): in flight ≥ [`PLATEAU_LEVEL`] × `parallel`.
    Closed {
        /// `--parallel`.
        parallel: u64,
        /// `--number` (≤ `parallel`: no plateau).
        number: u64,
        /// Count conversations in flight (`--multi-turn`).
        conversations: bool,
    },
    /// Open loop: from `ramp_s` (`--ramp-up`, 0 without) after the first send to the last send.
    Open {
        /// `--ramp-up` in seconds.
        ramp_s: Option<f64>,
    },
    /// No window applies (why, in words).
    Unmeasured(&'static str),
}

//! Why a run cannot have the open files it needs: the one resource check that fails a run (a usage
//! error naming `--parallel`) or warns (an SLA search step).

/// The open-file limit is too small, even raised to its hard limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// `needed` descriptors exceed the soft limit in force (`None`: unlimited) and its hard limit.
    #[error(
        "this run needs about {needed} open files (sockets for the requests in flight, plus {headroom}), \
         but the open-file limit (RLIMIT_NOFILE) is {} and its hard limit is {}: lower --parallel, or raise \
         the limit (e.g. `ulimit -n {needed}`, or `ulimit -Hn` as root / limits.conf)",
        show(.soft),
        show(.hard)
    )]
    FileLimit {
        /// Descriptors the run needs.
        needed: u64,
        /// [`super::FD_HEADROOM`], as the message states it.
        headroom: u64,
        /// The soft limit now in force.
        soft: Option<u64>,
        /// The hard limit.
        hard: Option<u64>,
    },
}

/// A limit as the message shows it.
fn show(v: &Option<u64>) -> String {
    v.map_or("unlimited".to_string(), |v| v.to_string())
}

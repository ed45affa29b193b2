//! Every system call llmperf makes that Rust's standard library does not wrap, and so the crate's only
//! `unsafe` code (a test, `module_graph_tests::unsafe_code_lives_in_sys`, keeps it here): the monotonic
//! and real-time clocks and the kernel's clock estimates, the thread timer slack, resource usage and the
//! open-file limit, a child process's fate ([`process`]), the timerfd of the precise timer, and kernel
//! receive time stamps on TCP sockets. Each function is a thin safe wrapper; callers never see a raw
//! pointer.
#![allow(unsafe_code)]

pub(crate) mod process;
pub(crate) mod rx_stamp;
#[cfg(target_os = "linux")]
pub(crate) mod timerfd;

/// Clock `id` in seconds; 0.0 when it cannot be read.
fn clock_s(id: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the callers pass clocks that exist on Linux/macOS.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// `CLOCK_MONOTONIC` in seconds (the clock the simulator's ground truth and the client share); 0.0 when
/// it cannot be read.
pub(crate) fn monotonic_s() -> f64 {
    clock_s(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` in seconds since the Unix epoch; 0.0 when it cannot be read.
pub(crate) fn realtime_s() -> f64 {
    clock_s(libc::CLOCK_REALTIME)
}

/// The kernel's clock estimates (`adjtimex`, read only): (estimated error s, maximum error s,
/// synchronised); `None` where the kernel does not say.
#[cfg(target_os = "linux")]
pub(crate) fn clock_estimates() -> Option<(f64, f64, bool)> {
    // SAFETY: an all-zero `timex` (modes = 0) only reads the kernel's state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    Some((
        tx.esterror as f64 * 1e-6,
        tx.maxerror as f64 * 1e-6,
        state != libc::TIME_ERROR,
    ))
}

/// The kernel's clock estimates: not known off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn clock_estimates() -> Option<(f64, f64, bool)> {
    None
}

/// Lets the calling thread's sleeps end within `ns` nanoseconds of their deadline (Linux timer slack;
/// the default is 50 µs). Nothing elsewhere.
pub(crate) fn set_timer_slack_ns(ns: u64) {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ns;
}

/// `getrusage(RUSAGE_SELF)`.
pub(crate) fn rusage_self() -> Option<libc::rusage> {
    // SAFETY: `rusage` is plain old data; zeroed is a valid value and `getrusage` only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF is always valid and `ru` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (rc == 0).then_some(ru)
}

/// Clock ticks per second of `/proc/…/stat` times (`sysconf(_SC_CLK_TCK)`); ≤ 0 when unknown.
#[allow(clippy::useless_conversion)]
pub(crate) fn clock_ticks_per_s() -> i64 {
    // SAFETY: sysconf has no preconditions.
    i64::from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
}

/// The open-file limit (`getrlimit(RLIMIT_NOFILE)`).
pub(crate) fn file_limit() -> Option<libc::rlimit> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    (rc == 0).then_some(rl)
}

/// Sets the open-file limit (`setrlimit(RLIMIT_NOFILE)`); whether it was accepted.
pub(crate) fn set_file_limit(rl: &libc::rlimit) -> bool {
    // SAFETY: `rl` points to a valid rlimit; the kernel checks its values.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, rl) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_read_the_system() {
        let a = monotonic_s();
        assert!(a > 0.0 && monotonic_s() >= a);
        assert!(rusage_self().is_some());
        assert!(clock_ticks_per_s() > 0);
        let rl = file_limit().expect("RLIMIT_NOFILE readable");
        assert!(
            set_file_limit(&rl),
            "setting the limit in force is accepted"
        );
        set_timer_slack_ns(1);
    }
}

//! A child process's fate: it dies with llmperf (`PR_SET_PDEATHSIG`), and it can be asked to stop with
//! SIGTERM, as Python's `Popen.terminate()` asks; and llmperf's own Ctrl-C when a full-screen view reads
//! the key instead of the terminal turning it into SIGINT.

use std::process::{Child, Command};

/// Asks the kernel to send SIGTERM to the child when llmperf's main thread ends (llmperf killed, or a
/// second Ctrl-C that exits at once), so no child outlives it. No effect off Linux.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl(2) is async-signal-safe and touches only the calling (child) process.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Sends SIGTERM to `child`, which the caller has not reaped yet.
pub(crate) fn terminate(child: &Child) {
    // SAFETY: kill(2) on our own child, not yet reaped, so its pid cannot have been reused.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

/// Sends SIGINT to llmperf itself: what the terminal does for a Ctrl-C typed while the dashboard holds
/// it in raw mode (where the key arrives as input instead), so the signal handlers act exactly as on a
/// real Ctrl-C.
pub(crate) fn interrupt_self() {
    // SAFETY: kill(2) on our own pid; SIGINT's handler is llmperf's (installed before any view starts).
    unsafe {
        libc::kill(libc::getpid(), libc::SIGINT);
    }
}

//! A `CLOCK_MONOTONIC` timerfd registered with tokio's reactor: waits for an absolute deadline with
//! microsecond precision (Linux only; see `engine::timer`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;

/// A non-blocking, close-on-exec `CLOCK_MONOTONIC` timerfd registered with the runtime's reactor.
pub(crate) fn timerfd() -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: plain syscall; the returned descriptor is owned by the OwnedFd below.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the OwnedFd stays open, and is the same descriptor, for as long as the AsyncFd owns it.
    unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }.ok()
}

/// Arms `fd` for the absolute `CLOCK_MONOTONIC` time `at_s` (seconds) and waits until it fires.
pub(crate) async fn wait(fd: &AsyncFd<OwnedFd>, at_s: f64) -> io::Result<()> {
    let s = at_s;
    let secs = s.floor();
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: secs as libc::time_t,
            tv_nsec: ((s - secs) * 1e9).min(999_999_999.0) as libc::c_long,
        },
    };
    let raw = fd.get_ref().as_raw_fd();
    // SAFETY: `raw` is a live timerfd; `spec` is a valid itimerspec; the old value is not asked for.
    let rc =
        unsafe { libc::timerfd_settime(raw, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        let mut guard = fd.readable().await?;
        let read = guard.try_io(|inner| {
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64 from a live timerfd.
            let n = unsafe {
                libc::read(
                    inner.get_ref().as_raw_fd(),
                    (&mut expirations as *mut u64).cast(),
                    8,
                )
            };
            if n == 8 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
        match read {
            Ok(result) => return result,
            Err(_would_block) => continue,
        }
    }
}

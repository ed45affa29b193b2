//! Kernel receive time stamps: the moment the bytes reached the socket, not the moment the client got
//! round to reading them. With `SO_TIMESTAMPNS` on, every `recvmsg` on a TCP socket also returns the
//! time the last segment it read arrived (`CLOCK_REALTIME`). That time is turned into an [`Instant`]
//! (`CLOCK_MONOTONIC`) by subtracting its age, measured on the real-time clock, from the monotonic now,
//! so the stamp needs no fixed offset between the two clocks and survives clock steps between reads.
//!
//! A client that is busy (thousands of streams on two cores) or descheduled then still times each chunk
//! at its arrival; how long the bytes waited for it is kept too (the read lag of the diagnostics).
//! Linux only; elsewhere, and wherever the kernel sends no stamp, reads are timed when they return.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::TcpStream;

/// A stamp older than this is not trusted (the real-time clock was stepped): the read time is used.
const MAX_AGE: Duration = Duration::from_secs(60);

/// Two monotonic reads around the real-time read this close together need no second try.
#[cfg(target_os = "linux")]
const TIGHT_BRACKET: Duration = Duration::from_micros(2);

/// The widest bracket accepted (the conversion then errs by at most half of it).
#[cfg(target_os = "linux")]
const MAX_BRACKET: Duration = Duration::from_micros(50);

/// Asks the kernel to stamp what `tcp` receives. Returns whether it agreed.
#[cfg(target_os = "linux")]
pub fn enable(tcp: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket, a pointer to a c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Asks the kernel to stamp what `tcp` receives (not available on this platform).
#[cfg(not(target_os = "linux"))]
pub fn enable(_tcp: &TcpStream) -> bool {
    false
}

/// `AsyncRead::poll_read` for `tcp`, with the arrival of the bytes read when the kernel stamps them
/// (`stamped`: [`enable`] agreed). `Ready(Ok(None))` for a read without a stamp (unstamped socket, EOF).
pub fn poll_read(
    tcp: &mut TcpStream,
    stamped: bool,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<Option<Instant>>> {
    if !stamped {
        return Pin::new(tcp).poll_read(cx, buf).map_ok(|()| None);
    }
    loop {
        std::task::ready!(tcp.poll_read_ready(cx))?;
        let unfilled = buf.initialize_unfilled();
        let io = &*tcp;
        match io.try_io(Interest::READABLE, || recv(io, unfilled)) {
            Ok((n, arrived)) => {
                buf.advance(n);
                return Poll::Ready(Ok(arrived));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// One read: the bytes read, and when the last of them arrived, if the kernel said.
#[cfg(target_os = "linux")]
fn recv(tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    use std::os::fd::AsRawFd;
    // Room for one cmsg carrying a timespec, aligned for cmsghdr.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at live buffers of the sizes given.
    let n = unsafe { libc::recvmsg(tcp.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut arrived = None;
    // SAFETY: the CMSG_* walk stays within msg_controllen, as the kernel filled it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                arrived = to_instant(&ts);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, arrived))
}

/// A real-time stamp as an [`Instant`]: the monotonic now minus the stamp's age. The real-time clock is
/// read between two monotonic reads and the midpoint taken; if the thread was preempted in between (the
/// bracket is wider than [`TIGHT_BRACKET`]) the clocks are read again, up to three times, keeping the
/// tightest bracket, so the conversion errs by at most half of it (and never by a preemption beyond
/// [`MAX_BRACKET`]: the read time is used then).
#[cfg(target_os = "linux")]
fn to_instant(ts: &libc::timespec) -> Option<Instant> {
    let nanos = |t: &libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
    let mut best: Option<(Duration, Instant, i128)> = None;
    for _ in 0..3 {
        let before = Instant::now();
        let mut real_now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a pointer to a timespec.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut real_now) } != 0 {
            return None;
        }
        let bracket = before.elapsed();
        if best.is_none_or(|(b, _, _)| bracket < b) {
            best = Some((bracket, before + bracket / 2, nanos(&real_now)));
        }
        if bracket <= TIGHT_BRACKET {
            break;
        }
    }
    let (bracket, mono_now, real_now_ns) = best?;
    if bracket > MAX_BRACKET {
        return None;
    }
    // A stamp from the future (clock stepped back) counts as just now.
    let age = Duration::from_nanos((real_now_ns - nanos(ts)).clamp(0, u64::MAX as i128) as u64);
    (age <= MAX_AGE)
        .then(|| mono_now.checked_sub(age))
        .flatten()
}

/// One read, timed when it returns (no kernel stamps on this platform).
#[cfg(not(target_os = "linux"))]
fn recv(tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    tcp.try_read(buf).map(|n| (n, None))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Bytes that wait in the socket before they are read keep the time they arrived.
    #[tokio::test]
    async fn a_late_read_keeps_the_arrival_time() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        assert!(enable(&client));
        let (mut server, _) = listener.accept().await.unwrap();
        // The kernel turns stamping on for the whole machine asynchronously (a deferred static key): the
        // first segments after the first `enable` may carry none. Wait until they do.
        let mut buf = [0u8; 16];
        let mut stamped = false;
        for _ in 0..100 {
            server.write_all(b"x").await.unwrap();
            client.readable().await.unwrap();
            if let Ok((_, arrived)) = recv(&client, &mut buf) {
                if arrived.is_some() {
                    stamped = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(stamped, "the kernel stamps TCP reads on Linux");
        let before_send = Instant::now();
        server.write_all(b"hello").await.unwrap();
        let after_send = Instant::now();
        std::thread::sleep(Duration::from_millis(200));
        client.readable().await.unwrap();
        let read_at = Instant::now();
        let (n, arrived) = recv(&client, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let arrived = arrived.expect("the kernel stamps TCP reads on Linux");
        // Arrival is around the send, well before the read 200 ms later (generous: clocks are read at
        // different moments and the machine is shared).
        assert!(arrived + Duration::from_millis(5) >= before_send);
        assert!(arrived <= after_send + Duration::from_millis(50));
        assert!(read_at.duration_since(arrived) >= Duration::from_millis(150));
    }
}

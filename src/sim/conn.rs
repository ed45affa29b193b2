//! The simulator's side of one TCP connection: a thin wrapper that can end the connection with a reset
//! (RST, via `SO_LINGER` 0 at close) instead of a clean FIN, for the `reset` fault, and that — when the
//! simulator records ground truth — reads with the kernel's receive stamps and publishes when the last
//! bytes read arrived, so a request's truth can start at its arrival at the socket. [`OpenSlot`] counts
//! the connections open at once against the simulator's connection limit.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::fault::ResetFlag;
use crate::clock;
use crate::sys::rx_stamp;

/// When the bytes of a connection's last read arrived (kernel stamp), as `f64` bits of monotonic seconds
/// ([`clock::secs`]); NaN when unknown.
#[derive(Clone)]
pub(crate) struct Arrival(Arc<AtomicU64>);

impl Arrival {
    fn new() -> Self {
        Arrival(Arc::new(AtomicU64::new(f64::NAN.to_bits())))
    }

    fn set(&self, secs: Option<f64>) {
        let v = secs.unwrap_or(f64::NAN);
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }

    /// The arrival of the last bytes read, in monotonic seconds, if known.
    pub(crate) fn get(&self) -> Option<f64> {
        Some(f64::from_bits(self.0.load(Ordering::Relaxed))).filter(|v| v.is_finite())
    }
}

/// A TCP stream that is reset, not closed, when dropped after its flag was set.
pub(crate) struct FaultConn {
    stream: TcpStream,
    reset: ResetFlag,
    /// Reads carry kernel receive stamps, published in `arrival`.
    stamped: bool,
    arrival: Arrival,
}

impl FaultConn {
    /// Wraps `stream`; setting `reset` makes the close a reset. With `stamp_arrivals`, reads take the
    /// kernel's receive stamps (where the platform has them) and publish them in [`FaultConn::arrival`].
    pub(crate) fn new(stream: TcpStream, reset: ResetFlag, stamp_arrivals: bool) -> Self {
        let stamped = stamp_arrivals && rx_stamp::enable(&stream);
        FaultConn {
            stream,
            reset,
            stamped,
            arrival: Arrival::new(),
        }
    }

    /// When the bytes of this connection's last read arrived.
    pub(crate) fn arrival(&self) -> Arrival {
        self.arrival.clone()
    }
}

impl Drop for FaultConn {
    fn drop(&mut self) {
        if self.reset.load(Ordering::Relaxed) {
            // Zero linger: close() discards unsent data and sends RST; it never blocks.
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for FaultConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let filled = buf.filled().len();
        let arrived = std::task::ready!(rx_stamp::poll_read(&mut me.stream, me.stamped, cx, buf))?;
        if buf.filled().len() > filled {
            me.arrival.set(arrived.map(clock::secs));
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for FaultConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// One open connection counted against the simulator's connection limit; dropping it frees the slot.
pub(crate) struct OpenSlot(Arc<AtomicU64>);

impl OpenSlot {
    /// A slot in `open` if fewer than `max` connections are open (`max` 0: no limit), else `None`.
    pub(crate) fn take(open: &Arc<AtomicU64>, max: u32) -> Option<OpenSlot> {
        let now = open.fetch_add(1, Ordering::AcqRel);
        if max > 0 && now >= u64::from(max) {
            open.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(OpenSlot(open.clone()))
    }
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

//! The simulator's side of one TCP connection: a thin wrapper that can end the connection with a reset
//! (RST, via `SO_LINGER` 0 at close) instead of a clean FIN, for the `reset` fault.

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::fault::ResetFlag;

/// A TCP stream that is reset, not closed, when dropped after its flag was set.
pub(crate) struct FaultConn {
    stream: TcpStream,
    reset: ResetFlag,
}

impl FaultConn {
    /// Wraps `stream`; setting `reset` makes the close a reset.
    pub(crate) fn new(stream: TcpStream, reset: ResetFlag) -> Self {
        FaultConn { stream, reset }
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
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
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

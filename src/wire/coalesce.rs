//! Write coalescing for the gateway's own HTTP/2 connections, to agents and to gRPC tool servers: what the
//! connection writes between two flushes leaves in one syscall.
//!
//! h2 writes the frames it has queued one at a time, a `writev` for each DATA frame with the frames before it:
//! a unary answer's HEADERS, DATA and trailers, or the frames of several streams, would each wake the peer.
//! [`Coalesced`] holds the writes and sends them together when the connection flushes. It never holds a flush
//! back: putting one off to the next turn of the scheduler, as it once did, wakes an idle worker thread for the
//! turn, which cost a call at concurrency 1 about a fifth of its latency.
//!
//! Not `tokio::io::BufWriter`, which writes and flushes alike but allocates its whole buffer per connection for the
//! connection's life (64 KiB each, or a smaller one that sends larger answers in pieces): this keeps at most 16 KiB.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes held at most; a write past this sends what is held first.
const MAX_HELD: usize = 64 * 1024;
/// Room an emptied buffer keeps for the next messages.
const KEPT_CAPACITY: usize = 16 * 1024;

/// A stream whose writes are held until the next flush, so the frames written before it go out together. Reads
/// pass straight through. Every flush the caller completes has written everything.
#[derive(Debug)]
pub struct Coalesced<T> {
    inner: T,
    held: Vec<u8>,
}

impl<T> Coalesced<T> {
    pub fn new(inner: T) -> Self {
        Self { inner, held: Vec::new() }
    }
}

impl<T: AsyncWrite + Unpin> Coalesced<T> {
    /// Writes out everything held; on `Pending` or an error, what was written is no longer held.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut written = 0;
        let result = loop {
            if written == self.held.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.inner).poll_write(cx, &self.held[written..]) {
                Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(err)) => break Poll::Ready(Err(err)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.held.drain(..written);
        if self.held.is_empty() && self.held.capacity() > KEPT_CAPACITY {
            // A large message passed: an idle connection keeps no more than a small message needs.
            self.held = Vec::with_capacity(KEPT_CAPACITY);
        }
        result
    }

    /// Makes room for `len` more bytes: `Ready(true)` if they are to be held, `Ready(false)` if they are too
    /// many to hold and go straight to the stream (everything held having been written first).
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<bool>> {
        if self.held.len() + len > MAX_HELD {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(len <= MAX_HELD))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !ready!(this.poll_room(cx, buf.len()))? {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        this.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = bufs.iter().map(|b| b.len()).sum();
        if !ready!(this.poll_room(cx, len))? {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        for buf in bufs {
            this.held.extend_from_slice(buf);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Counts the writes that reach it.
    struct Writes(Vec<Vec<u8>>);

    impl AsyncWrite for Writes {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.get_mut().0.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn writes_are_held_until_a_flush_then_sent_together_at_once() {
        let mut stream = Coalesced::new(Writes(Vec::new()));
        stream.write_all(b"HEADERS").await.unwrap();
        stream.write_all(b"DATA").await.unwrap();
        assert!(stream.inner.0.is_empty(), "nothing is written before the flush");
        let flushed = futures::poll!(std::pin::pin!(stream.flush()));
        assert!(flushed.is_ready(), "a flush is never put off");
        assert_eq!(stream.inner.0, vec![b"HEADERSDATA".to_vec()], "one write");
    }

    #[tokio::test]
    async fn a_flush_awaited_to_the_end_writes_everything_and_large_writes_pass_through() {
        let (near, mut far) = tokio::io::duplex(1 << 20);
        let mut stream = Coalesced::new(near);
        stream.write_all(b"small").await.unwrap();
        stream.flush().await.unwrap();
        let large = vec![7u8; MAX_HELD + 1];
        stream.write_all(&large).await.unwrap();
        // A write past what may be held is not held: it reached the peer before any flush.
        assert!(stream.held.is_empty(), "{} bytes held", stream.held.len());
        let mut before_flush = vec![0u8; 5 + large.len()];
        far.read_exact(&mut before_flush).await.unwrap();
        assert_eq!(&before_flush[..5], b"small");
        assert_eq!(&before_flush[5..], &large[..], "passed through whole, before any flush");
        stream.write_all(b"tail").await.unwrap();
        stream.shutdown().await.unwrap();
        let mut got = Vec::new();
        far.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"tail", "in order, nothing lost");
    }

    #[tokio::test]
    async fn a_slow_reader_gets_every_byte_in_order() {
        let (near, mut far) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut stream = Coalesced::new(near);
            for i in 0..2_000u32 {
                stream.write_all(&i.to_be_bytes()).await.unwrap();
                if i % 7 == 0 {
                    stream.flush().await.unwrap();
                }
            }
            stream.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        far.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        let expected: Vec<u8> = (0..2_000u32).flat_map(u32::to_be_bytes).collect();
        assert_eq!(got, expected);
    }
}

//! A bound on how long a client may leave the gateway's writes waiting.
//!
//! A client that stops reading (an agent suspended with Ctrl-Z, a process wedged
//! mid-stream, a laptop gone to sleep with its socket open) lets the socket buffers
//! fill, and then every write to it waits. hyper has no write timeout, so the
//! response waited forever, and with it everything the response holds: the upstream
//! stream (no longer read either), the connection's concurrency permits and lease,
//! and the connection's place under the cap (a busy connection is never evicted).
//! One stuck client could hold a connection's only slot, or at the cap the whole
//! gateway, until it went away.
//!
//! So the client socket counts how long a write has been refused: the first write
//! that would block arms a deadline on the gateway's clock, any write that goes
//! through disarms it, and a write still refused at the deadline fails with
//! `TimedOut`. hyper then ends the connection; the response body is dropped, which
//! cancels the upstream stream, logs the attempt as the client's disconnect and
//! releases its permits. The limit is on a stall, not on a response: a client that
//! reads slowly but steadily is never cut off. Writes that go through at once (all
//! of them, usually: loopback buffers hold megabytes) cost one branch.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::clock::{GatewayClock, Wait};

/// A client socket whose writes fail once refused for longer than a limit.
pub struct WriteStallLimit<T> {
    io: T,
    clock: Arc<dyn GatewayClock>,
    limit: Duration,
    /// Armed by the first refused write, disarmed by the next one that goes through.
    stalled: Option<Wait>,
}

impl<T> WriteStallLimit<T> {
    /// Wraps `io`: a write refused for `limit` on `clock` fails.
    pub fn new(io: T, clock: Arc<dyn GatewayClock>, limit: Duration) -> WriteStallLimit<T> {
        WriteStallLimit { io, clock, limit, stalled: None }
    }

    /// Passes a write's outcome on, timing a refusal (see the module docs).
    fn watch<R>(&mut self, cx: &mut Context<'_>, outcome: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if outcome.is_ready() {
            self.stalled = None;
            return outcome;
        }
        let deadline = self.stalled.get_or_insert_with(|| self.clock.sleep(self.limit));
        if deadline.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.stalled = None;
        tracing::warn!(event = "conn.write_stalled", limit_secs = self.limit.as_secs());
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for {} s; connection closed", self.limit.as_secs()),
        )))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStallLimit<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStallLimit<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, outcome)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, outcome)
    }

    /// Not timed here: the close has its own bound (`linger`).
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;

    use switchyard_types::UnixMillis;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpSocket, TcpStream};
    use tokio::task::JoinHandle;

    use super::*;
    use crate::clock::ManualClock;
    use crate::test_support::eventually;

    const LIMIT: Duration = Duration::from_secs(30);
    /// Far more than the socket buffers hold (the client's is fixed at 64 KB, the
    /// server's grows to 4 MB at most here), so a writer needs its peer to read.
    const PAYLOAD: usize = 64 * 1024 * 1024;
    /// What the client reads to let a stalled writer go on: over a third of the
    /// server's largest send buffer, the free space the kernel wakes a writer for.
    const READ_ON: usize = 2 * 1024 * 1024;

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let socket = TcpSocket::new_v4().unwrap_or_else(|e| panic!("{e}"));
        // A fixed receive buffer: no autotuning to grow it while the client reads.
        socket.set_recv_buffer_size(64 * 1024).unwrap_or_else(|e| panic!("{e}"));
        let (client, accepted) = tokio::join!(socket.connect(addr), listener.accept());
        (client.unwrap_or_else(|e| panic!("{e}")), accepted.unwrap_or_else(|e| panic!("{e}")).0)
    }

    /// A server writing `PAYLOAD` bytes to its client through the limit.
    fn write_everything(server: TcpStream, clock: &Arc<ManualClock>) -> JoinHandle<io::Result<()>> {
        let mut server = WriteStallLimit::new(server, clock.clone(), LIMIT);
        tokio::spawn(async move { server.write_all(&vec![b'x'; PAYLOAD]).await })
    }

    /// Waits until a write has been refused and the deadline armed `LIMIT` ahead.
    async fn until_stalled(clock: &ManualClock) {
        eventually("a refused write arming the deadline", || clock.pending_in().contains(&LIMIT)).await;
    }

    /// Lets the writer run, then says whether it finished.
    async fn finished_after_a_moment(writer: &JoinHandle<io::Result<()>>) -> bool {
        // Real time on purpose: a writer still waiting shows only as not finishing.
        tokio::time::sleep(Duration::from_millis(100)).await;
        writer.is_finished()
    }

    async fn outcome(writer: JoinHandle<io::Result<()>>) -> io::Result<()> {
        tokio::time::timeout(Duration::from_secs(5), writer)
            .await
            .unwrap_or_else(|_| panic!("the writer did not finish"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn clock() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)))
    }

    #[tokio::test]
    async fn a_write_the_client_refuses_for_the_limit_fails() {
        let (_client, server) = pair().await;
        let clock = clock();
        let writer = write_everything(server, &clock);
        until_stalled(&clock).await;
        clock.advance(LIMIT - Duration::from_millis(1));
        assert!(!finished_after_a_moment(&writer).await, "failed before the limit");
        clock.advance(Duration::from_millis(1));
        let failed = outcome(writer).await;
        assert_eq!(failed.map_err(|e| e.kind()), Err(ErrorKind::TimedOut));
    }

    #[tokio::test]
    async fn a_client_that_keeps_reading_is_never_cut_off() {
        let (mut client, server) = pair().await;
        let clock = clock();
        let writer = write_everything(server, &clock);
        let mut buf = vec![0_u8; READ_ON];
        let mut read = 0;
        // Each stall lasts most of the limit before the client reads a little more:
        // more than the limit in all, never the limit at once.
        for _ in 0..3 {
            until_stalled(&clock).await;
            clock.advance(LIMIT - Duration::from_secs(1));
            assert!(!finished_after_a_moment(&writer).await, "a client still reading was cut off");
            client.read_exact(&mut buf).await.unwrap_or_else(|e| panic!("{e}"));
            read += READ_ON;
            // The next stall starts afresh: its deadline is a whole limit away.
            eventually("the next stall arming a fresh deadline", || clock.pending_in() == [LIMIT]).await;
        }
        while read < PAYLOAD {
            let n = client.read(&mut buf).await.unwrap_or_else(|e| panic!("{e}"));
            assert!(n > 0, "closed after {read} bytes");
            read += n;
        }
        assert!(outcome(writer).await.is_ok());
        assert!(clock.pending_in().is_empty(), "a deadline outlived the stall: {:?}", clock.pending_in());
    }
}

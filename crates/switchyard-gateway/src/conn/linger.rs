//! A graceful close for client connections (the "lingering close" web servers do).
//!
//! hyper may end a connection while the client is still sending: it answered before
//! reading the whole request body (`413` for a body over the limit, any refusal that
//! does not need the body), and then closes. Closing a socket with unread data in it
//! makes the kernel answer with a reset instead of an orderly end, and the client's
//! next write or read fails with "connection reset": the answer that says why (the
//! `413` and its JSON) is lost to a client still busy writing, which then retries
//! the same oversized request.
//!
//! So the connection's socket, when hyper shuts it down, first ends its own side
//! after the answer (FIN). If the client's data is waiting unread, it then reads
//! and throws away what the client still sends until the client ends its side
//! too, for at most [`LINGER`] on the gateway's clock and [`LINGER_BYTES`]; one
//! that never stops is cut off at either bound, as before. With nothing unread
//! (the usual close: the client went away, or a kept-alive connection timed out)
//! the close is at once, at the cost of one read.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::clock::{GatewayClock, Wait};

/// The longest a closing connection waits for the client to stop sending.
pub const LINGER: Duration = Duration::from_secs(2);

/// The most a closing connection reads and discards: twice the largest inference
/// body the gateway accepts by default.
pub const LINGER_BYTES: usize = 64 * 1024 * 1024;

/// A client connection's socket whose shutdown lingers (see the module docs).
pub struct LingeringClose {
    tcp: TcpStream,
    clock: Arc<dyn GatewayClock>,
    draining: Option<Drain>,
}

/// A shutdown under way: the write side is closed, the read side is being drained.
struct Drain {
    deadline: Wait,
    left: usize,
}

impl LingeringClose {
    /// Wraps an accepted connection.
    pub fn new(tcp: TcpStream, clock: Arc<dyn GatewayClock>) -> LingeringClose {
        LingeringClose { tcp, clock, draining: None }
    }
}

impl AsyncRead for LingeringClose {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for LingeringClose {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut scratch = [0_u8; 8192];
        let drain = match &mut this.draining {
            Some(drain) => drain,
            None => {
                // FIN after the answer: the client reads it whole, then its end.
                ready!(Pin::new(&mut this.tcp).poll_shutdown(cx))?;
                // Only a client caught sending is waited for: with nothing unread the
                // close is orderly as it is, and the connection's place under the
                // cap is free at once (a kept-alive client may hold its end open).
                let mut buf = ReadBuf::new(&mut scratch);
                let first = match Pin::new(&mut this.tcp).poll_read(cx, &mut buf) {
                    Poll::Ready(Ok(())) if !buf.filled().is_empty() => buf.filled().len(),
                    _ => return Poll::Ready(Ok(())),
                };
                this.draining.insert(Drain { deadline: this.clock.sleep(LINGER), left: LINGER_BYTES - first })
            }
        };
        if drain.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.tcp).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                // The client's end, or a reset: nothing left to protect.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    if n == 0 || n >= drain.left {
                        return Poll::Ready(Ok(()));
                    }
                    drain.left -= n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;

    use switchyard_types::UnixMillis;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::clock::ManualClock;

    /// More than loopback's socket buffers hold, so a client writing it needs the
    /// other side to read.
    const UPLOAD: usize = 16 * 1024 * 1024;

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let client = client.unwrap_or_else(|e| panic!("{e}"));
        (client, accepted.unwrap_or_else(|e| panic!("{e}")).0)
    }

    fn manual_clock() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)))
    }

    /// The client writes `UPLOAD` bytes, ends its side, and reads what came back.
    async fn upload_then_read(mut client: TcpStream) -> (io::Result<()>, io::Result<Vec<u8>>) {
        let wrote = client.write_all(&vec![b'x'; UPLOAD]).await;
        let _ = client.shutdown().await;
        let mut answer = Vec::new();
        let read = client.read_to_end(&mut answer).await.map(|_| answer);
        (wrote, read)
    }

    #[tokio::test]
    async fn a_client_still_sending_reads_the_answer_and_a_clean_end() {
        let (client, server) = pair().await;
        let clock = manual_clock();
        let client = tokio::spawn(upload_then_read(client));
        let mut server = LingeringClose::new(server, clock);
        // The server reads a little of the request, answers, and closes.
        let mut head = [0_u8; 16];
        server.read_exact(&mut head).await.unwrap_or_else(|e| panic!("{e}"));
        server.write_all(b"HTTP/1.1 413 ...").await.unwrap_or_else(|e| panic!("{e}"));
        server.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
        drop(server);
        let (wrote, read) = client.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(wrote.is_ok(), "{wrote:?}");
        assert_eq!(read.unwrap_or_else(|e| panic!("{e}")), b"HTTP/1.1 413 ...");
    }

    #[tokio::test]
    async fn without_it_the_same_close_resets_the_client() {
        // The control: the plain socket's close, with the upload unread, is a reset.
        let (client, mut server) = pair().await;
        let client = tokio::spawn(upload_then_read(client));
        let mut head = [0_u8; 16];
        server.read_exact(&mut head).await.unwrap_or_else(|e| panic!("{e}"));
        server.write_all(b"HTTP/1.1 413 ...").await.unwrap_or_else(|e| panic!("{e}"));
        server.shutdown().await.unwrap_or_else(|e| panic!("{e}"));
        drop(server);
        let (wrote, _) = client.await.unwrap_or_else(|e| panic!("{e}"));
        let kind = wrote.err().map(|e| e.kind());
        assert!(matches!(kind, Some(ErrorKind::ConnectionReset | ErrorKind::BrokenPipe)), "{kind:?}");
    }

    #[tokio::test]
    async fn with_nothing_unread_the_close_is_at_once() {
        // A kept-alive client that sends nothing and keeps its end open: the
        // connection does not wait for it (its place under the cap is needed).
        let (mut client, server) = pair().await;
        let mut server = LingeringClose::new(server, manual_clock());
        tokio::time::timeout(Duration::from_secs(5), server.shutdown())
            .await
            .unwrap_or_else(|_| panic!("the close waited for an idle client"))
            .unwrap_or_else(|e| panic!("{e}"));
        drop(server);
        let mut fin = [0_u8; 1];
        assert_eq!(client.read(&mut fin).await.unwrap_or_else(|e| panic!("{e}")), 0);
    }

    #[tokio::test]
    async fn a_client_that_never_ends_its_side_is_let_go_at_the_deadline() {
        let (mut client, server) = pair().await;
        let clock = manual_clock();
        let mut server = LingeringClose::new(server, clock.clone());
        client.write_all(b"more to come").await.unwrap_or_else(|e| panic!("{e}"));
        let closing = tokio::spawn(async move { server.shutdown().await });
        // Draining, not done: the client has neither ended nor been timed out.
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!closing.is_finished());
        let mut fin = [0_u8; 1];
        assert_eq!(client.read(&mut fin).await.unwrap_or_else(|e| panic!("{e}")), 0, "FIN first");
        clock.advance(LINGER);
        let closed = tokio::time::timeout(Duration::from_secs(5), closing)
            .await
            .unwrap_or_else(|_| panic!("the linger outlived its deadline"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(closed.is_ok(), "{closed:?}");
    }
}

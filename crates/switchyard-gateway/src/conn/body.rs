//! Request and response bodies as the connection layer wraps them: the request body
//! must arrive within the body-read timeout (on the gateway's clock); the response
//! body carries the guard that marks its connection busy until hyper is done with it.
//!
//! hyper has a header-read timeout but none for bodies, so a client that declares
//! 1,000 bytes and trickles them would otherwise hold its connection (and the
//! handler reading it) indefinitely.

use std::error::Error as StdError;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, HttpBody};
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

use super::slots::Busy;
use crate::clock::{GatewayClock, Wait};

/// Boxed body error.
type BoxError = Box<dyn StdError + Send + Sync>;

/// The request body did not arrive in full within the body-read timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in full within {} s", .0.as_secs_f64())]
pub struct BodyReadTimeout(pub Duration);

/// A request body that fails with [`BodyReadTimeout`] once `deadline` passes before
/// its end. The timer is armed only when the body is actually waited for.
pub struct DeadlineBody<B> {
    inner: B,
    clock: Arc<dyn GatewayClock>,
    deadline: Instant,
    timeout: Duration,
    sleep: Option<Wait>,
}

impl<B> DeadlineBody<B> {
    /// `inner`, due in full within `timeout` from now.
    pub fn new(inner: B, clock: Arc<dyn GatewayClock>, timeout: Duration) -> DeadlineBody<B> {
        let deadline = clock.now_mono() + timeout;
        DeadlineBody { inner, clock, deadline, timeout, sleep: None }
    }
}

impl<B> HttpBody for DeadlineBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if frame.is_none() || this.inner.is_end_stream() {
                    this.sleep = None;
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let (clock, deadline) = (&this.clock, this.deadline);
                let sleep = this.sleep.get_or_insert_with(|| clock.sleep_until(deadline));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimeout(this.timeout))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its connection marked busy until hyper drops it
/// (after the last frame, or when the client goes away).
pub struct TrackedBody {
    inner: Body,
    _busy: Busy,
}

impl TrackedBody {
    /// `inner`, holding `busy` for as long as it lives.
    pub fn new(inner: Body, busy: Busy) -> TrackedBody {
        TrackedBody { inner, _busy: busy }
    }
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The first error of type `T` in `err`'s source chain (body errors arrive wrapped
/// by axum and by the length limit).
pub fn find_cause<'a, T: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a T> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures_util::{StreamExt, stream};
    use switchyard_types::UnixMillis;

    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn a_body_that_stalls_past_its_deadline_fails_with_the_timeout() {
        let clock = Arc::new(ManualClock::new(UnixMillis(0)));
        let chunks =
            stream::iter([Ok::<_, Infallible>(Bytes::from_static(b"{\"a\""))]).chain(stream::pending());
        let stalled = Body::from_stream(chunks);
        let body = Body::new(DeadlineBody::new(stalled, clock.clone(), Duration::from_secs(10)));
        let reading = tokio::spawn(axum::body::to_bytes(body, 1024));
        for _ in 0..100 {
            if clock.pending_timers() > 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(clock.pending_in(), [Duration::from_secs(10)]);
        clock.advance_ms(10_000);
        let err = match reading.await {
            Ok(Err(e)) => e,
            other => panic!("expected a read error, got {other:?}"),
        };
        let inner = err.into_inner();
        let timeout = find_cause::<BodyReadTimeout>(inner.as_ref());
        assert_eq!(timeout.map(|t| t.0), Some(Duration::from_secs(10)));
    }

    #[tokio::test]
    async fn a_complete_body_never_arms_the_timer() {
        let clock = Arc::new(ManualClock::new(UnixMillis(0)));
        let body = Body::new(DeadlineBody::new(Body::from("{}"), clock.clone(), Duration::from_secs(10)));
        let bytes = axum::body::to_bytes(body, 1024).await.unwrap_or_default();
        assert_eq!(&bytes[..], b"{}");
        assert_eq!(clock.pending_timers(), 0);
    }
}

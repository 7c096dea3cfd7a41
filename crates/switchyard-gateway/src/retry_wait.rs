//! The wait of a background writer that keeps a failed batch and tries it again:
//! the next queued item, or — only while a batch is pending — the retry time, or
//! the stop. Shared by the resilience persister and team mode's announcer.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// What the writer does next.
#[derive(Debug)]
pub enum Next<T> {
    /// An item arrived.
    Item(T),
    /// Nothing arrived within the retry pause: write the pending batch again.
    Retry,
    /// Shutdown, or every sender is gone.
    Stop,
}

/// Waits on `recv` (a channel's `recv()`), with a retry pause when `pending`.
pub async fn next<T>(
    recv: impl Future<Output = Option<T>>,
    pending: bool,
    retry_after: Duration,
    shutdown: &CancellationToken,
) -> Next<T> {
    tokio::select! {
        item = recv => item.map_or(Next::Stop, Next::Item),
        () = tokio::time::sleep(retry_after), if pending => Next::Retry,
        () = shutdown.cancelled() => Next::Stop,
    }
}

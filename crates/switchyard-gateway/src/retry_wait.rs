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

/// The first pause before a failed batch is written again; it doubles with each
/// failure in a row, up to [`LONGEST_PAUSE`], so a database that stays away is not
/// hammered (nor the log filled) once a second.
pub const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// The longest pause between two tries.
pub const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// The pause after `failures` failures in a row.
pub fn pause_after(failures: u32) -> Duration {
    FIRST_PAUSE.saturating_mul(1u32 << failures.saturating_sub(1).min(10)).min(LONGEST_PAUSE)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_and_is_capped() {
        assert_eq!(pause_after(1), Duration::from_millis(500));
        assert_eq!(pause_after(2), Duration::from_secs(1));
        assert_eq!(pause_after(4), Duration::from_secs(4));
        assert_eq!(pause_after(40), LONGEST_PAUSE);
    }
}

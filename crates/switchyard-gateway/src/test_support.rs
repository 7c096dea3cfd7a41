//! Helpers shared by the crate's unit tests.

use std::time::Duration;

/// Polls `done` until it holds, for work on another thread or runtime (a lane, a
/// pool's reaper), failing after five seconds with `what`.
pub async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen");
}

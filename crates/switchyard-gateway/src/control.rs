//! Runtime control shared by the request path, the management service and the
//! desktop shell: the routing pause switch and the change feed that tells UIs what
//! to refetch (IPC events in the desktop app, `GET /api/events` over HTTP).
//!
//! The feed is a bounded broadcast: publishing never blocks and never fails (no
//! subscriber is fine); a subscriber that falls behind sees `Lagged` and treats it as
//! "everything changed". Consumers coalesce bursts with [`next_batch`], so a storm of
//! engine transitions becomes a few UI refreshes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use switchyard_types::status::{Change, ChangeTopic};
use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::team::Team;

/// Buffered changes per subscriber before it lags.
const FEED_CAPACITY: usize = 256;

/// The pause switch and the change feed.
pub struct Control {
    paused: AtomicBool,
    feed: broadcast::Sender<Change>,
    clock: Arc<dyn Clock>,
    /// Cancelled when the gateway starts shutting down: long-lived subscribers
    /// (an open UI's `/api/events`) end then instead of holding the drain open.
    closing: tokio_util::sync::CancellationToken,
    /// Team mode's announcer (unset with SQLite).
    team: OnceLock<Arc<Team>>,
}

impl Control {
    /// Routing on, no subscribers.
    pub fn new(clock: Arc<dyn Clock>) -> Arc<Control> {
        let (feed, _) = broadcast::channel(FEED_CAPACITY);
        Arc::new(Control {
            paused: AtomicBool::new(false),
            feed,
            clock,
            closing: Default::default(),
            team: OnceLock::new(),
        })
    }

    /// Whether inference requests are refused.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Pauses or resumes routing; publishes `Routing` when that changed anything.
    pub fn set_paused(&self, paused: bool) -> bool {
        let changed = self.paused.swap(paused, Ordering::Relaxed) != paused;
        if changed {
            tracing::info!(event = if paused { "routing.paused" } else { "routing.resumed" });
            self.notify(ChangeTopic::Routing);
        }
        changed
    }

    /// Publishes one change made here (cheap; never blocks). In team mode a change
    /// of stored configuration (connections, settings, leases) is also announced
    /// to the other replicas, which reload it.
    pub fn notify(&self, topic: ChangeTopic) {
        self.notify_local(topic);
        if let Some(team) = self.team.get() {
            team.configuration_changed(topic);
        }
    }

    /// Publishes a change to this replica's UIs only (one another replica made).
    pub fn notify_local(&self, topic: ChangeTopic) {
        // An error only means nobody listens right now.
        let _ = self.feed.send(Change { topic, at: self.clock.now_wall() });
    }

    /// Team mode's replica state, when attached.
    pub fn team(&self) -> Option<&Arc<Team>> {
        self.team.get()
    }

    /// Team mode: announce configuration changes through `team` from now on.
    pub fn attach_team(&self, team: Arc<Team>) {
        let _ = self.team.set(team);
    }

    /// Ends the feed for its long-lived subscribers (gateway shutdown).
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Resolves once [`Control::close`] was called.
    pub async fn closed(&self) {
        self.closing.cancelled().await;
    }

    /// A new subscription to the change feed.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.feed.subscribe()
    }
}

/// Waits for the next change, then gathers whatever else arrives within `window`,
/// and returns the distinct topics in a stable order. A lagged receiver reports
/// every topic. `None` once the feed is closed.
pub async fn next_batch(rx: &mut broadcast::Receiver<Change>, window: Duration) -> Option<Vec<ChangeTopic>> {
    let mut topics = BTreeSet::new();
    match rx.recv().await {
        Ok(change) => {
            topics.insert(change.topic);
        }
        Err(broadcast::error::RecvError::Lagged(_)) => topics.extend(ChangeTopic::ALL),
        Err(broadcast::error::RecvError::Closed) => return None,
    }
    let deadline = tokio::time::Instant::now() + window;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(change)) => {
                topics.insert(change.topic);
            }
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => topics.extend(ChangeTopic::ALL),
            Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => break,
        }
    }
    Some(topics.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use switchyard_types::UnixMillis;

    fn control() -> Arc<Control> {
        Control::new(Arc::new(ManualClock::new(UnixMillis(1_000))))
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_becomes_one_batch_of_distinct_topics() {
        let c = control();
        let mut rx = c.subscribe();
        for _ in 0..50 {
            c.notify(ChangeTopic::Cooldowns);
            c.notify(ChangeTopic::Breakers);
        }
        let batch = next_batch(&mut rx, Duration::from_millis(100)).await;
        assert_eq!(batch, Some(vec![ChangeTopic::Breakers, ChangeTopic::Cooldowns]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lagging_subscriber_refreshes_everything() {
        let c = control();
        let mut rx = c.subscribe();
        for _ in 0..(FEED_CAPACITY + 10) {
            c.notify(ChangeTopic::Lockouts);
        }
        let batch = next_batch(&mut rx, Duration::from_millis(10)).await.unwrap_or_default();
        assert_eq!(batch.len(), ChangeTopic::ALL.len());
    }

    #[tokio::test(start_paused = true)]
    async fn pausing_twice_publishes_once() {
        let c = control();
        let mut rx = c.subscribe();
        assert!(c.set_paused(true));
        assert!(!c.set_paused(true));
        assert!(c.is_paused());
        assert_eq!(next_batch(&mut rx, Duration::from_millis(10)).await, Some(vec![ChangeTopic::Routing]));
        assert!(rx.try_recv().is_err());
    }
}

//! The cap on open client connections, and which connection gives way when a new
//! one arrives at the cap.
//!
//! Invariants: at most `cap` client connections are served at once (one semaphore
//! permit each, released when the connection's task ends). A connection is *idle*
//! while none of its requests is in flight: it has sent nothing yet, it is kept alive
//! between requests, or it is still trickling a request head. When a newcomer
//! arrives at the cap, the connection idle the longest is asked to close; a busy
//! connection is never closed for a newcomer (it declines, and the next idle one is
//! asked); when every connection is busy the newcomer waits until one ends or goes
//! idle. So idle sockets, however many, can delay a new client by one close each,
//! never lock it out.
//!
//! Failure behaviour: fail-safe. The cap holds even when nothing can give way; the
//! newcomer then waits in the accept queue, as it would without a gateway-side cap.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// What the registry and every slot share.
struct Shared {
    /// Woken when a connection goes idle or declines to close: the waiting
    /// newcomer looks again.
    changed: Notify,
    /// Newcomers waiting at the cap. A request's end notifies `changed` only
    /// when one waits: it ends thousands of times a second on every lane, and a
    /// notification with nobody waiting still writes `changed`'s state, a cache
    /// line all connections share.
    waiting: AtomicUsize,
    clock: Arc<dyn Clock>,
    origin: Instant,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.now_mono().saturating_duration_since(self.origin).as_millis())
            .unwrap_or(u64::MAX)
    }
}

/// The open client connections under one cap.
pub struct Slots {
    cap: usize,
    permits: Arc<Semaphore>,
    open: Mutex<HashMap<u64, Arc<Slot>>>,
    next_id: AtomicU64,
    shared: Arc<Shared>,
}

/// One open connection's state, as the cap sees it.
pub struct Slot {
    in_flight: AtomicUsize,
    served: AtomicU64,
    idle_since_ms: AtomicU64,
    close: Notify,
    shared: Arc<Shared>,
}

impl Slots {
    /// Room for `cap` connections (at least one).
    pub fn new(cap: usize, clock: Arc<dyn Clock>) -> Arc<Slots> {
        let cap = cap.max(1);
        let origin = clock.now_mono();
        Arc::new(Slots {
            cap,
            permits: Arc::new(Semaphore::new(cap)),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            shared: Arc::new(Shared { changed: Notify::new(), waiting: AtomicUsize::new(0), clock, origin }),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.cap - self.permits.available_permits()
    }

    /// Room for one more connection: at once below the cap; at the cap, after the
    /// longest-idle connection has closed (or, with every connection busy, after one
    /// ends). `None` once `stop` fires.
    pub async fn admit(self: &Arc<Self>, stop: &CancellationToken) -> Option<Admitted> {
        loop {
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return Some(self.register(permit));
            }
            // Announced before looking for an idle connection: a request that
            // ends after the look sees it and notifies (both sides `SeqCst`).
            let _waiting = Waiting::announce(&self.shared);
            self.ask_longest_idle_to_close();
            tokio::select! {
                permit = self.permits.clone().acquire_owned() => {
                    return permit.ok().map(|p| self.register(p));
                }
                () = self.shared.changed.notified() => {}
                () = stop.cancelled() => return None,
            }
        }
    }

    fn register(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Admitted {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            in_flight: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            idle_since_ms: AtomicU64::new(self.shared.now_ms()),
            close: Notify::new(),
            shared: self.shared.clone(),
        });
        self.open.lock().unwrap_or_else(PoisonError::into_inner).insert(id, slot.clone());
        Admitted { slots: self.clone(), id, slot, _permit: permit }
    }

    /// Asks the connection idle the longest to close; `false` when none is idle.
    pub(super) fn ask_longest_idle_to_close(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        // Ties (same millisecond, or a clock that does not move) go to the
        // connection accepted first.
        let longest = open
            .iter()
            .filter(|(_, s)| s.is_idle())
            .min_by_key(|(id, s)| (s.idle_since_ms.load(Ordering::SeqCst), **id));
        match longest {
            Some((_, slot)) => {
                slot.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's place under the cap; dropping it frees the place.
pub struct Admitted {
    slots: Arc<Slots>,
    id: u64,
    slot: Arc<Slot>,
    _permit: OwnedSemaphorePermit,
}

impl Admitted {
    /// The connection's state.
    pub fn slot(&self) -> &Arc<Slot> {
        &self.slot
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.remove(&self.id);
        // The table never shrinks on removal: after a burst of thousands of
        // connections it would keep the peak's size (5,000 connections: 136 KB) for
        // the process's life. Once it is mostly empty it is rebuilt at twice what it
        // holds, so closing a burst's connections one by one rebuilds it a few times
        // (each smaller than the last), and steady traffic never does.
        if open.capacity() > REGISTRY_KEPT && open.len() < open.capacity() / 8 {
            let len = open.len();
            open.shrink_to(len * 2);
        }
    }
}

/// Connections the registry keeps room for however few are open.
const REGISTRY_KEPT: usize = 64;

impl Slot {
    /// A request of this connection starts; it is busy until the guard drops (with
    /// the response body).
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.served.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// No request in flight.
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// At least one request has started on this connection.
    pub fn has_served(&self) -> bool {
        self.served.load(Ordering::SeqCst) > 0
    }

    /// Completes when a newcomer at the cap asks this connection to close.
    pub async fn close_requested(&self) {
        self.close.notified().await;
    }

    /// This connection was asked to close but is busy: let the newcomer ask another.
    pub fn decline(&self) {
        self.shared.changed.notify_one();
    }
}

/// A newcomer waiting at the cap, counted in `Shared::waiting` while it lives.
struct Waiting<'a>(&'a Shared);

impl<'a> Waiting<'a> {
    fn announce(shared: &'a Shared) -> Waiting<'a> {
        shared.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(shared)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request in flight on a connection.
pub struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle_since_ms.store(self.0.shared.now_ms(), Ordering::SeqCst);
            if self.0.shared.waiting.load(Ordering::SeqCst) > 0 {
                self.0.shared.changed.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchyard_types::UnixMillis;

    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn the_registry_gives_back_a_burst_s_room_as_its_connections_close() {
        let slots = Slots::new(10_000, Arc::new(ManualClock::new(UnixMillis(0))));
        let stop = CancellationToken::new();
        let registry = || slots.open.lock().unwrap_or_else(PoisonError::into_inner);
        let capacity = || registry().capacity();
        let mut burst = Vec::new();
        for _ in 0..5_000 {
            burst.extend(slots.admit(&stop).await);
        }
        assert_eq!(slots.open(), 5_000);
        let peak = capacity();
        assert!(peak >= 5_000, "{peak}");
        // Closing in any order: keep a few long-lived ones from the middle.
        let kept: Vec<Admitted> = burst.drain(2_000..2_003).collect();
        drop(burst);
        assert_eq!(slots.open(), 3);
        assert!(capacity() <= REGISTRY_KEPT, "room for {} connections after the burst", capacity());
        // Those left are still registered (and can still be asked to close).
        assert_eq!(registry().len(), 3);
        drop(kept);
        assert_eq!(slots.open(), 0);
    }

    #[tokio::test]
    async fn below_the_cap_admission_is_immediate_and_dropping_frees_the_place() {
        let slots = Slots::new(2, Arc::new(ManualClock::new(UnixMillis(0))));
        let stop = CancellationToken::new();
        let a = slots.admit(&stop).await;
        let b = slots.admit(&stop).await;
        assert!(a.is_some() && b.is_some());
        assert_eq!(slots.open(), 2);
        drop(a);
        assert_eq!(slots.open(), 1);
        assert!(slots.admit(&stop).await.is_some());
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_connection_is_asked_to_close() {
        let clock = Arc::new(ManualClock::new(UnixMillis(0)));
        let slots = Slots::new(3, clock.clone());
        let stop = CancellationToken::new();
        let Some(old) = slots.admit(&stop).await else { panic!("no room") };
        clock.advance_ms(10);
        let Some(busy) = slots.admit(&stop).await else { panic!("no room") };
        let request = busy.slot().begin();
        clock.advance_ms(10);
        let Some(newer) = slots.admit(&stop).await else { panic!("no room") };

        let waiting = tokio::spawn({
            let slots = slots.clone();
            let stop = stop.clone();
            async move { slots.admit(&stop).await.is_some() }
        });
        // The oldest idle connection is asked; the busy one and the newer idle one are not.
        tokio::time::timeout(Duration::from_secs(5), old.slot().close_requested())
            .await
            .unwrap_or_else(|_| panic!("the longest-idle connection was never asked to close"));
        assert!(!waiting.is_finished());
        drop(old);
        assert!(
            tokio::time::timeout(Duration::from_secs(5), waiting).await.is_ok_and(|r| r.is_ok_and(|ok| ok))
        );
        drop((request, newer));
    }

    #[tokio::test]
    async fn with_every_connection_busy_the_newcomer_waits_for_one_to_go_idle() {
        let slots = Slots::new(1, Arc::new(ManualClock::new(UnixMillis(0))));
        let stop = CancellationToken::new();
        let Some(only) = slots.admit(&stop).await else { panic!("no room") };
        let request = only.slot().begin();
        let waiting = tokio::spawn({
            let slots = slots.clone();
            let stop = stop.clone();
            async move { slots.admit(&stop).await.is_some() }
        });
        // Let the newcomer reach its wait: the busy connection declines and stays open.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        drop(request);
        tokio::time::timeout(Duration::from_secs(5), only.slot().close_requested())
            .await
            .unwrap_or_else(|_| panic!("the connection that went idle was never asked to close"));
        drop(only);
        assert!(
            tokio::time::timeout(Duration::from_secs(5), waiting).await.is_ok_and(|r| r.is_ok_and(|ok| ok))
        );
    }

    #[tokio::test]
    async fn a_stop_ends_the_wait() {
        let slots = Slots::new(1, Arc::new(ManualClock::new(UnixMillis(0))));
        let stop = CancellationToken::new();
        let held = slots.admit(&stop).await;
        let _busy = held.as_ref().map(|a| a.slot().begin());
        stop.cancel();
        assert!(slots.admit(&stop).await.is_none());
    }
}

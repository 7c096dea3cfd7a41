//! Session affinity (SPEC §4.4): a client session keeps to the connection that
//! served it, so the upstream's prompt cache for that conversation stays warm.
//!
//! - A **pin** maps (session, provider) to one connection. Keying by provider too
//!   keeps a session that uses models of two providers (say Claude for the main
//!   turns and GLM for small ones) on one account of each, instead of flipping.
//! - The pin is a **soft preference**: the pinned connection goes first among the
//!   eligible candidates (before the combo's strategy order). A pinned connection
//!   the engine rules out (cooling, breaker open, locked, failing) is replaced by
//!   whichever connection serves, and the session is re-pinned there: it does not
//!   bounce back when the first recovers, which would lose the replacement's warm
//!   cache. A pinned connection that is merely full this time keeps its pin.
//! - The TTL (`sessionAffinityTtlMs`, 0 = off) is **sliding**: every request of the
//!   session renews it. Changing the setting applies to existing pins at once.
//! - The table is **bounded** (LRU, [`MAX_SESSIONS`] sessions) and **persisted off
//!   the hot path**: requests only mark pins dirty; [`persist`] writes them in one
//!   transaction every few seconds and at shutdown, and start-up reads them back.

pub mod key;
pub mod persist;

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard, PoisonError};

use lru::LruCache;
use switchyard_types::UnixMillis;
use switchyard_types::api::SessionPinView;

pub use key::{SessionKey, session_of};

/// Most sessions kept; the least recently used beyond it are forgotten.
pub const MAX_SESSIONS: usize = 10_000;

/// One pin of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// Provider id.
    pub provider: String,
    /// The pinned connection.
    pub connection: String,
    /// When the pin was made (or moved).
    pub pinned_at: UnixMillis,
    /// The session's last request on this provider.
    pub last_seen: UnixMillis,
}

impl Pin {
    fn live(&self, now: UnixMillis, ttl_ms: u32) -> bool {
        ttl_ms > 0 && now < self.last_seen.plus_millis(i64::from(ttl_ms))
    }
}

/// Pins to upsert, and (session, provider) rows to delete.
pub type DirtyPins = (Vec<(SessionKey, Pin)>, Vec<(SessionKey, String)>);

/// A candidate as affinity sees it.
#[derive(Debug, Clone, Copy)]
pub struct PinCandidate<'a> {
    /// Provider id.
    pub provider: &'a str,
    /// Connection id.
    pub connection: &'a str,
    /// The upstream model (candidates of one target share provider and model).
    pub model: &'a str,
}

/// What happened to the pinned connection during a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinnedFate {
    /// It served (or it was never tried because it is simply full): keep the pin.
    Kept,
    /// It was ruled out or failed: the serving connection takes the pin.
    Replaced,
}

#[derive(Default)]
struct Inner {
    sessions: Option<LruCache<SessionKey, Vec<Pin>>>,
    /// (session, provider) whose stored row is out of date.
    dirty: HashSet<(SessionKey, String)>,
}

impl Inner {
    fn sessions(&mut self) -> &mut LruCache<SessionKey, Vec<Pin>> {
        self.sessions.get_or_insert_with(|| {
            LruCache::new(NonZeroUsize::new(MAX_SESSIONS).unwrap_or(NonZeroUsize::MIN))
        })
    }
}

/// A change of the pin table worth telling other replicas about (team mode).
#[derive(Debug, Clone, Copy)]
pub enum PinChange<'a> {
    /// A session was pinned, or moved to another connection.
    Moved(&'a SessionKey, &'a Pin),
    /// An operator cleared pins (all, or one connection's).
    Cleared(Option<&'a str>),
}

/// Called with each [`PinChange`] made here, outside the table's lock.
pub type PinObserver = Box<dyn Fn(PinChange<'_>) + Send + Sync>;

/// The pin table.
#[derive(Default)]
pub struct SessionAffinity {
    inner: Mutex<Inner>,
    /// Wakes the writer when the first change since its last flush arrives, so an
    /// idle gateway (or one without sessions) arms no timer at all.
    changed: tokio::sync::Notify,
    /// Team mode's announcer of new pins, moves and clears.
    observer: std::sync::OnceLock<PinObserver>,
}

impl std::fmt::Debug for SessionAffinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionAffinity").finish_non_exhaustive()
    }
}

impl SessionAffinity {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves each of the session's pinned connections to the front of its own
    /// target (the candidates of the same provider and model) in `order`; the
    /// order between targets (the combo's chain) is kept. Returns the plan indices
    /// of the pinned candidates it found (for [`Self::served`]).
    pub fn prefer(
        &self,
        session: &SessionKey,
        ttl_ms: u32,
        now: UnixMillis,
        candidates: &[PinCandidate<'_>],
        order: &mut Vec<usize>,
    ) -> Vec<usize> {
        let mut inner = self.lock();
        let Some(pins) = inner.sessions().get(session) else { return Vec::new() };
        let is_pinned = |c: &PinCandidate<'_>| {
            pins.iter()
                .any(|p| p.provider == c.provider && p.connection == c.connection && p.live(now, ttl_ms))
        };
        let pinned: Vec<usize> =
            order.iter().copied().filter(|&i| candidates.get(i).is_some_and(is_pinned)).collect();
        drop(inner);
        let same_target = |a: usize, b: usize| match (candidates.get(a), candidates.get(b)) {
            (Some(x), Some(y)) => x.provider == y.provider && x.model == y.model,
            _ => false,
        };
        for &p in &pinned {
            let Some(from) = order.iter().position(|&i| i == p) else { continue };
            let Some(to) = order.iter().position(|&i| same_target(i, p)) else { continue };
            if to < from {
                order.remove(from);
                order.insert(to, p);
            }
        }
        pinned
    }

    /// Records that `served` answered the session's request. The provider's pin
    /// moves there unless the pinned connection was only full (`Kept`); either
    /// way the session's TTL slides from `now`.
    pub fn served(
        &self,
        session: &SessionKey,
        served: PinCandidate<'_>,
        pinned: PinnedFate,
        now: UnixMillis,
    ) {
        let mut inner = self.lock();
        let pins = inner.sessions().get_or_insert_mut(session.clone(), Vec::new);
        // The pin when it is new or moved (not a renewal): other replicas hear of it.
        let moved = match pins.iter_mut().find(|p| p.provider == served.provider) {
            Some(pin) if pin.connection == served.connection || pinned == PinnedFate::Kept => {
                pin.last_seen = now;
                None
            }
            Some(pin) => {
                pin.connection = served.connection.to_owned();
                pin.pinned_at = now;
                pin.last_seen = now;
                self.observer.get().map(|_| pin.clone())
            }
            None => {
                let pin = Pin {
                    provider: served.provider.to_owned(),
                    connection: served.connection.to_owned(),
                    pinned_at: now,
                    last_seen: now,
                };
                let moved = self.observer.get().map(|_| pin.clone());
                pins.push(pin);
                moved
            }
        };
        let first_change = inner.dirty.is_empty();
        inner.dirty.insert((session.clone(), served.provider.to_owned()));
        drop(inner);
        if first_change {
            self.changed.notify_one();
        }
        if let (Some(observer), Some(pin)) = (self.observer.get(), moved) {
            observer(PinChange::Moved(session, &pin));
        }
    }

    /// Team mode: report pin changes made here to `observer` from now on.
    pub fn observe(&self, observer: PinObserver) {
        let _ = self.observer.set(observer);
    }

    /// Takes over a pin another replica made, unless this replica pinned that
    /// session's provider more recently. Not marked for writing: its maker wrote it.
    pub fn adopt(&self, session: SessionKey, pin: Pin) {
        let mut inner = self.lock();
        let pins = inner.sessions().get_or_insert_mut(session, Vec::new);
        match pins.iter_mut().find(|p| p.provider == pin.provider) {
            Some(have) if have.pinned_at > pin.pinned_at => {
                have.last_seen = have.last_seen.max(pin.last_seen);
            }
            Some(have) => {
                let last_seen = have.last_seen.max(pin.last_seen);
                *have = Pin { last_seen, ..pin };
            }
            None => pins.push(pin),
        }
    }

    /// Completes when pins changed since the last [`Self::take_dirty`].
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Live pins, most recent first.
    pub fn list(&self, ttl_ms: u32, now: UnixMillis) -> Vec<SessionPinView> {
        let inner = self.lock();
        let Some(sessions) = inner.sessions.as_ref() else { return Vec::new() };
        let mut out: Vec<SessionPinView> = sessions
            .iter()
            .flat_map(|(key, pins)| pins.iter().map(move |p| (key, p)))
            .filter(|(_, p)| p.live(now, ttl_ms))
            .map(|(key, p)| SessionPinView {
                session: key.as_str().chars().take(12).collect(),
                provider: p.provider.clone(),
                connection: p.connection.clone(),
                pinned_at: p.pinned_at,
                last_seen_at: p.last_seen,
                expires_at: p.last_seen.plus_millis(i64::from(ttl_ms)),
            })
            .collect();
        out.sort_by_key(|p| std::cmp::Reverse(p.last_seen_at));
        out
    }

    /// Live pins per connection, counted in one pass.
    pub fn counts(&self, ttl_ms: u32, now: UnixMillis) -> HashMap<String, u32> {
        let inner = self.lock();
        let mut out = HashMap::new();
        let Some(sessions) = inner.sessions.as_ref() else { return out };
        for pin in sessions.iter().flat_map(|(_, pins)| pins.iter()).filter(|p| p.live(now, ttl_ms)) {
            *out.entry(pin.connection.clone()).or_insert(0u32) += 1;
        }
        out
    }

    /// Removes every pin (or those on `connection`); returns how many.
    pub fn clear(&self, connection: Option<&str>) -> u32 {
        let removed = self.clear_from_peer(connection);
        if let Some(observer) = self.observer.get() {
            observer(PinChange::Cleared(connection));
        }
        removed
    }

    /// [`Self::clear`] as another replica asked for it (not announced again).
    pub fn clear_from_peer(&self, connection: Option<&str>) -> u32 {
        let mut inner = self.lock();
        let Inner { sessions, dirty } = &mut *inner;
        let Some(sessions) = sessions.as_mut() else { return 0 };
        let mut removed = 0u32;
        let mut emptied = Vec::new();
        for (key, pins) in sessions.iter_mut() {
            pins.retain(|p| {
                let drop = connection.is_none_or(|c| p.connection == c);
                if drop {
                    removed += 1;
                    dirty.insert((key.clone(), p.provider.clone()));
                }
                !drop
            });
            if pins.is_empty() {
                emptied.push(key.clone());
            }
        }
        for key in emptied {
            sessions.pop(&key);
        }
        drop(inner);
        if removed > 0 {
            self.changed.notify_one();
        }
        removed
    }

    /// Loads stored pins (start-up), most recent last so they end up most recent
    /// in the LRU order.
    pub fn restore(&self, mut rows: Vec<(SessionKey, Pin)>) {
        rows.sort_by_key(|(_, p)| p.last_seen);
        let mut inner = self.lock();
        for (key, pin) in rows {
            let pins = inner.sessions().get_or_insert_mut(key, Vec::new);
            pins.retain(|p| p.provider != pin.provider);
            pins.push(pin);
        }
    }

    /// Marks pins dirty again (their write failed; the next flush retries them).
    pub fn requeue(&self, keys: impl IntoIterator<Item = (SessionKey, String)>) {
        let mut inner = self.lock();
        inner.dirty.extend(keys);
        drop(inner);
        self.changed.notify_one();
    }

    /// The changes since the last call.
    pub fn take_dirty(&self) -> DirtyPins {
        let mut inner = self.lock();
        let dirty = std::mem::take(&mut inner.dirty);
        let mut upserts = Vec::new();
        let mut deletes = Vec::new();
        for (key, provider) in dirty {
            let pin = inner
                .sessions
                .as_mut()
                .and_then(|s| s.peek(&key))
                .and_then(|pins| pins.iter().find(|p| p.provider == provider).cloned());
            match pin {
                Some(pin) => upserts.push((key, pin)),
                None => deletes.push((key, provider)),
            }
        }
        (upserts, deletes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: UnixMillis = UnixMillis(1_900_000_000_000);
    const TTL: u32 = 600_000;

    fn cands() -> Vec<PinCandidate<'static>> {
        vec![
            PinCandidate { provider: "anthropic", connection: "a", model: "sonnet" },
            PinCandidate { provider: "anthropic", connection: "b", model: "sonnet" },
            PinCandidate { provider: "glm", connection: "g", model: "glm-5" },
        ]
    }

    fn ordered(t: &SessionAffinity, s: &SessionKey, now: UnixMillis, eligible: &[usize]) -> Vec<usize> {
        let mut order = eligible.to_vec();
        t.prefer(s, TTL, now, &cands(), &mut order);
        order
    }

    #[test]
    fn a_pin_goes_first_and_slides_with_use() {
        let t = SessionAffinity::default();
        let s = SessionKey::new("header", "s1");
        assert_eq!(ordered(&t, &s, T0, &[0, 1, 2]), vec![0, 1, 2], "no pin yet");
        t.served(&s, cands()[1], PinnedFate::Replaced, T0);
        assert_eq!(ordered(&t, &s, T0, &[0, 1, 2]), vec![1, 0, 2]);
        let later = T0.plus_millis(i64::from(TTL) - 1);
        t.served(&s, cands()[1], PinnedFate::Kept, later);
        assert_eq!(ordered(&t, &s, later.plus_millis(i64::from(TTL) - 1), &[0, 1, 2]), vec![1, 0, 2], "slid");
        assert_eq!(ordered(&t, &s, later.plus_millis(i64::from(TTL)), &[0, 1, 2]), vec![0, 1, 2], "expired");
    }

    #[test]
    fn a_replaced_pin_moves_and_a_full_one_stays() {
        let t = SessionAffinity::default();
        let s = SessionKey::new("header", "s1");
        t.served(&s, cands()[0], PinnedFate::Replaced, T0);
        // `a` was ruled out, `b` served: the pin moves and stays after `a` is back.
        t.served(&s, cands()[1], PinnedFate::Replaced, T0.plus_millis(1));
        assert_eq!(ordered(&t, &s, T0.plus_millis(2), &[0, 1, 2]), vec![1, 0, 2]);
        // `b` was only full, `a` served this once: the pin stays on `b`.
        t.served(&s, cands()[0], PinnedFate::Kept, T0.plus_millis(3));
        assert_eq!(ordered(&t, &s, T0.plus_millis(4), &[0, 1, 2]), vec![1, 0, 2]);
    }

    #[test]
    fn pins_are_per_provider_and_move_only_within_their_target() {
        let t = SessionAffinity::default();
        let s = SessionKey::new("header", "s1");
        t.served(&s, cands()[1], PinnedFate::Replaced, T0);
        t.served(&s, cands()[2], PinnedFate::Replaced, T0.plus_millis(5));
        // The combo's chain (anthropic before glm) stands; within anthropic, b first.
        assert_eq!(ordered(&t, &s, T0.plus_millis(6), &[0, 1, 2]), vec![1, 0, 2]);
        assert_eq!(ordered(&t, &s, T0.plus_millis(6), &[2, 0, 1]), vec![2, 1, 0]);
        assert_eq!(t.counts(TTL, T0).get("b"), Some(&1));
        assert_eq!(t.list(TTL, T0.plus_millis(6)).len(), 2);
        assert_eq!(t.list(0, T0.plus_millis(6)).len(), 0, "TTL 0: nothing is live");
    }

    #[test]
    fn dirty_pins_are_taken_once_and_clears_become_deletes() {
        let t = SessionAffinity::default();
        let s = SessionKey::new("header", "s1");
        t.served(&s, cands()[0], PinnedFate::Replaced, T0);
        t.served(&s, cands()[0], PinnedFate::Kept, T0.plus_millis(1));
        let (up, del) = t.take_dirty();
        assert_eq!((up.len(), del.len()), (1, 0));
        assert_eq!(up[0].1.last_seen, T0.plus_millis(1));
        assert_eq!(t.take_dirty(), (vec![], vec![]));
        assert_eq!(t.clear(Some("a")), 1);
        assert_eq!(t.take_dirty(), (vec![], vec![(s, "anthropic".to_owned())]));
    }

    #[test]
    fn the_table_is_bounded() {
        let t = SessionAffinity::default();
        for i in 0..MAX_SESSIONS + 10 {
            t.served(&SessionKey::new("header", &i.to_string()), cands()[1], PinnedFate::Replaced, T0);
        }
        assert_eq!(t.list(TTL, T0).len(), MAX_SESSIONS);
        let newest = SessionKey::new("header", &(MAX_SESSIONS + 9).to_string());
        assert_eq!(ordered(&t, &newest, T0, &[0, 1]), vec![1, 0]);
        let oldest = SessionKey::new("header", "0");
        assert_eq!(ordered(&t, &oldest, T0, &[0, 1]), vec![0, 1], "the oldest session was forgotten");
    }
}

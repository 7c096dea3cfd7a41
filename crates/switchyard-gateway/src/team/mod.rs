//! Team mode (SPEC §9): several replicas sharing one Postgres behave as one
//! gateway. Every resilience transition a replica makes (breaker, cooldown or
//! terminal state, model lockout, pin) and every configuration change (connections,
//! keys, combos, aliases, settings, leases, the management token) is announced with
//! `NOTIFY` and applied by the other replicas to their in-memory state, so the
//! request path still reads memory only.
//!
//! Map: [`notice`] (what is said), [`publish`] (the announcer: coalesced batches on
//! a connection of its own, off the request path), [`listen`] (the receiver:
//! `LISTEN`, apply, reconnect and resynchronise), [`token`] (the shared management
//! token).
//!
//! Ordering: each state notice carries the time of its transition on the origin;
//! a receiver keeps, per thing, the time of the last change it made or adopted,
//! and ignores anything older. So a late notice never undoes a newer local change
//! (an operator's clear, say), and a resynchronisation after an outage keeps what
//! this replica decided while the database was away.
//!
//! Failure: without the database, replicas keep routing on what they know (fail
//! open); health reports `database: unavailable`; on reconnect each replica loads
//! the stored state again (its own unsaved transitions are retried by the
//! persister and announced once written).

pub mod listen;
pub mod notice;
pub mod publish;
pub mod token;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use switchyard_resilience::EngineEvent;
use switchyard_types::UnixMillis;
use switchyard_types::status::ChangeTopic;
use tokio::sync::mpsc;

use notice::{Notice, ReloadKind, StateKind};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::affinity::PinChange;
use listen::Replica;

/// How long start-up waits for the receiver's first resynchronisation.
const FIRST_SYNC: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts team mode's announcer and receiver, and has the pin table and the
/// usage wall report their changes. Returns once the receiver listens and has
/// loaded the stored state, so a replica that answers requests hears every
/// change the others make from then on.
pub async fn start(
    team: Arc<Team>,
    replica: Replica,
    url: &str,
    shutdown: CancellationToken,
) -> Result<Vec<JoinHandle<()>>, sqlx::Error> {
    let pool = publish::connect(url)?;
    let observer_team = team.clone();
    replica.resilience.affinity.observe(Box::new(move |change| match change {
        PinChange::Moved(session, pin) => observer_team.pinned(Notice::Pin {
            session: session.as_str().to_owned(),
            provider: pin.provider.clone(),
            connection: pin.connection.clone(),
            pinned_at: pin.pinned_at,
            last_seen: pin.last_seen,
        }),
        PinChange::Cleared(connection) => {
            observer_team.pinned(Notice::PinsCleared { connection: connection.map(str::to_owned) });
        }
    }));
    let wall_team = team.clone();
    replica.claude_wall.observe_changes(Box::new(move |connection, state, at| {
        let notice = Notice::Wall {
            connection: connection.to_owned(),
            at,
            state: serde_json::to_value(state).unwrap_or_default(),
        };
        wall_team.stamp(notice.coalesce_key(), at);
        wall_team.send(Outgoing::Notice(notice));
    }));
    let engine = replica.resilience.engine.clone();
    let announcer =
        tokio::spawn(publish::run(team.clone(), pool, replica.store.clone(), engine, shutdown.clone()));
    let mut synced = team.synced.subscribe();
    let receiver = tokio::spawn(listen::run(team, replica, url.to_owned(), shutdown));
    if tokio::time::timeout(FIRST_SYNC, synced.wait_for(|done| *done)).await.is_err() {
        tracing::warn!(event = "team.first_sync_slow", note = "serving before the first resynchronisation");
    }
    Ok(vec![announcer, receiver])
}

/// What the announcer is asked to send.
#[derive(Debug)]
pub enum Outgoing {
    /// A notice as it is.
    Notice(Notice),
    /// A connection's lockouts changed: the announcer reads its current table.
    Lockouts {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// When.
        at: UnixMillis,
    },
}

/// Stores `value` under `key` unless a greater one is there; whether it did.
fn raise<V: Ord>(map: &Mutex<HashMap<String, V>>, key: String, value: V) -> bool {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    match map.get(&key) {
        Some(have) if *have > value => false,
        _ => {
            map.insert(key, value);
            true
        }
    }
}

/// This replica's side of team mode: its id, the announcer's queue, the ordering
/// stamps and whether the database is reachable.
pub struct Team {
    origin: String,
    outbox: mpsc::UnboundedSender<Outgoing>,
    queue: Mutex<Option<mpsc::UnboundedReceiver<Outgoing>>>,
    /// Per thing: the (time, replica) of the last change made or adopted here.
    stamps: Mutex<HashMap<String, (UnixMillis, String)>>,
    /// Per connection: when it was last reset (credentials changed, operator).
    resets: Mutex<HashMap<String, UnixMillis>>,
    available: AtomicBool,
    /// Notices applied from other replicas (for tests and logs).
    applied: AtomicU64,
    /// Set once the receiver listens and has loaded the stored state.
    synced: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl Team {
    /// A replica with a fresh random id; the database counts as reachable (it was
    /// at start) until the receiver says otherwise.
    pub fn new() -> Arc<Team> {
        let (outbox, queue) = mpsc::unbounded_channel();
        Arc::new(Team {
            origin: crate::secrets::generate_secret("r-")[..14].to_owned(),
            outbox,
            queue: Mutex::new(Some(queue)),
            stamps: Mutex::new(HashMap::new()),
            resets: Mutex::new(HashMap::new()),
            available: AtomicBool::new(true),
            applied: AtomicU64::new(0),
            synced: tokio::sync::watch::Sender::new(false),
        })
    }

    /// This replica's id.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the database answered last time the receiver looked.
    pub fn database_available(&self) -> bool {
        self.available.load(Ordering::Relaxed)
    }

    /// Notices from other replicas applied so far.
    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::Relaxed)
    }

    fn set_available(&self, up: bool) {
        if self.available.swap(up, Ordering::Relaxed) != up {
            if up {
                tracing::info!(event = "team.database_back");
            } else {
                tracing::warn!(event = "team.database_unavailable", note = "routing on the last known state");
            }
        }
    }

    /// The announcer's queue (taken once, by [`publish::run`]).
    fn take_queue(&self) -> Option<mpsc::UnboundedReceiver<Outgoing>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Records a change of `key` made here at `at`.
    fn stamp(&self, key: String, at: UnixMillis) {
        raise(&self.stamps, key, (at, self.origin.clone()));
    }

    /// Whether state of `key` from `at` on replica `origin` is at least as new as
    /// what this replica has; if so it becomes the newest. Equal times are ordered
    /// by replica id, so two replicas that changed one thing in the same
    /// millisecond still settle on the same state; an equal stamp is a later
    /// notice of the same replica (one replica's notices arrive in order).
    fn newer(&self, key: &str, at: UnixMillis, origin: &str) -> bool {
        raise(&self.stamps, key.to_owned(), (at, origin.to_owned()))
    }

    /// Records a reset of `connection` at `at` (here or elsewhere).
    fn record_reset(&self, connection: &str, at: UnixMillis) {
        raise(&self.resets, connection.to_owned(), at);
    }

    /// Whether `connection` was reset at or after `at` (a terminal state decided
    /// before that no longer holds).
    fn reset_since(&self, connection: &str, at: UnixMillis) -> bool {
        self.resets.lock().unwrap_or_else(PoisonError::into_inner).get(connection).is_some_and(|r| *r >= at)
    }

    /// A connection was reset here (new credentials, or an operator's reset): it
    /// lifts a terminal state on every replica, which an ordinary health notice
    /// never does.
    pub fn connection_reset(&self, connection: &str, provider: &str, at: UnixMillis) {
        self.record_reset(connection, at);
        self.stamp(StateKind::Health.key(connection), at);
        self.stamp(StateKind::Lockouts.key(connection), at);
        self.send(Outgoing::Notice(Notice::Reset {
            connection: connection.to_owned(),
            provider: provider.to_owned(),
            at,
        }));
    }

    fn send(&self, out: Outgoing) {
        // Fails only once the announcer stopped (shutdown).
        let _ = self.outbox.send(out);
    }

    /// An engine transition made here (called from the engine's event sink, after
    /// its locks are released; cheap: a queue push).
    pub fn engine_event(&self, event: &EngineEvent, at: UnixMillis) {
        let notice = match event {
            EngineEvent::Breaker { provider, record, .. } => Notice::Breaker {
                provider: provider.clone(),
                at,
                record: serde_json::to_value(record).unwrap_or_default(),
            },
            EngineEvent::Cooldown { connection, provider, health, .. } => Notice::Health {
                connection: connection.clone(),
                provider: provider.clone(),
                at,
                record: serde_json::to_value(health).unwrap_or_default(),
            },
            EngineEvent::Lockout { connection, provider, .. } => {
                self.stamp(StateKind::Lockouts.key(connection), at);
                self.send(Outgoing::Lockouts {
                    connection: connection.clone(),
                    provider: provider.clone(),
                    at,
                });
                return;
            }
            EngineEvent::ProviderGate { .. } => return,
        };
        self.stamp(notice.coalesce_key(), at);
        self.send(Outgoing::Notice(notice));
    }

    /// A session was pinned or moved here.
    pub fn pinned(&self, notice: Notice) {
        self.send(Outgoing::Notice(notice));
    }

    /// Stored configuration changed here (from [`crate::control::Control::notify`]).
    pub fn configuration_changed(&self, topic: ChangeTopic) {
        let what = match topic {
            ChangeTopic::Connections => ReloadKind::Routing,
            ChangeTopic::Settings => ReloadKind::Settings,
            ChangeTopic::Leases => ReloadKind::Leases,
            // Engine topics travel as state notices; pausing routing is per replica.
            _ => return,
        };
        self.send(Outgoing::Notice(Notice::Reload { what }));
    }

    /// The team's management token changed here.
    pub fn token_rotated(&self) {
        self.send(Outgoing::Notice(Notice::Reload { what: ReloadKind::Token }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: UnixMillis = UnixMillis(1_000);

    #[test]
    fn a_later_change_wins_and_a_tie_goes_to_the_larger_replica_id_on_every_replica() {
        let (a, b) = (Team::new(), Team::new());
        let (low, high) = if a.origin < b.origin { (&a, &b) } else { (&b, &a) };
        // Both change X in the same millisecond; each then hears the other.
        low.stamp("h:x".into(), T);
        high.stamp("h:x".into(), T);
        assert!(low.newer("h:x", T, &high.origin.clone()), "the larger id's record is taken");
        assert!(!high.newer("h:x", T, &low.origin.clone()), "and kept there: both settle on it");
        // Older never wins; newer always does.
        assert!(!low.newer("h:x", UnixMillis(999), "zzz"));
        assert!(low.newer("h:x", UnixMillis(1_001), ""));
        let high_origin = high.origin.clone();
        assert!(
            low.newer("h:x", UnixMillis(1_001), &high_origin),
            "the same replica, same millisecond: in order"
        );
        // A stored row (no replica) loses a tie with anything.
        low.stamp("b:p".into(), T);
        assert!(!low.newer("b:p", T, ""));
    }

    #[test]
    fn a_reset_outranks_terminal_states_decided_before_it() {
        let team = Team::new();
        assert!(!team.reset_since("x", T));
        team.connection_reset("x", "anthropic", T);
        assert!(team.reset_since("x", UnixMillis(999)), "a terminal from before the reset is void");
        assert!(team.reset_since("x", T));
        assert!(!team.reset_since("x", UnixMillis(1_001)), "a terminal after it stands");
        assert!(!team.newer("h:x", UnixMillis(999), "r-other"), "the reset stamped the health");
    }
}

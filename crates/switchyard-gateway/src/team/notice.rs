//! What replicas tell each other over `LISTEN/NOTIFY` (channel [`CHANNEL`]): one
//! JSON object per notification, tagged with the replica that made the change.
//!
//! State notices carry the state itself (a breaker record, a connection's health, a
//! lockout table, a pin), so a receiver applies them without a database round trip
//! and the hot path keeps reading memory. Topic notices say "reload this from the
//! database" (connections, keys, combos, aliases, settings, leases): those are
//! rows the origin already committed before announcing them.

use serde::{Deserialize, Serialize};
use switchyard_types::UnixMillis;

/// The notification channel every replica listens on.
pub const CHANNEL: &str = "switchyard";

/// Postgres refuses payloads of 8,000 bytes or more; a notice that would not fit is
/// not sent (logged): the receivers catch up at their next resynchronisation.
pub const MAX_PAYLOAD: usize = 7_900;

/// One notification: who sent it, and what changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending replica's id (a replica ignores its own notices).
    #[serde(rename = "o")]
    pub origin: String,
    /// The change.
    #[serde(flatten)]
    pub notice: Notice,
}

/// A change one replica made that the others apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "kebab-case")]
pub enum Notice {
    /// A provider breaker's record changed.
    Breaker {
        /// Provider id.
        provider: String,
        /// When the transition happened (origin's wall clock).
        at: UnixMillis,
        /// The engine's `BreakerRecord`, as JSON.
        record: serde_json::Value,
    },
    /// A connection's cooldown health changed (cooling, terminal, cleared).
    Health {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// When the transition happened.
        at: UnixMillis,
        /// The engine's `ConnectionHealth`, as JSON.
        record: serde_json::Value,
    },
    /// A connection's model lockouts changed.
    Lockouts {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// When the change happened.
        at: UnixMillis,
        /// The engine's `LockoutTable`, as JSON.
        table: serde_json::Value,
    },
    /// A Claude account's usage-wall state changed: its low-priority lane started
    /// or ended, or a limit-reset claim began or finished.
    Wall {
        /// Connection id.
        connection: String,
        /// When the change happened.
        at: UnixMillis,
        /// The wall's `ConnWall` (lane and reset memo), as JSON.
        state: serde_json::Value,
    },
    /// A connection was reset (new credentials, or an operator's reset): its
    /// cooldown, terminal state and lockouts are gone.
    Reset {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// When.
        at: UnixMillis,
    },
    /// A session was pinned (or re-pinned) to a connection.
    Pin {
        /// The stored session key (a hash, never the client's header value).
        session: String,
        /// Provider of the pin.
        provider: String,
        /// The pinned connection.
        connection: String,
        /// When it was pinned.
        pinned_at: UnixMillis,
        /// When the session was last served.
        last_seen: UnixMillis,
    },
    /// Pins were cleared by an operator (all, or those on one connection).
    PinsCleared {
        /// Only this connection's, when set.
        connection: Option<String>,
    },
    /// Stored configuration changed: reload it from the database.
    Reload {
        /// What to reload.
        what: ReloadKind,
    },
}

/// Which stored configuration a [`Notice::Reload`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReloadKind {
    /// Connections, client keys, combos, aliases and gateway settings.
    Routing,
    /// The resilience settings document.
    Settings,
    /// Exclusive leases.
    Leases,
    /// The team's management token.
    Token,
}

/// Which replicated state a key names: the key under which a thing's notices
/// coalesce and its ordering stamp is kept (`h:<connection>`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    /// A provider's breaker.
    Breaker,
    /// A connection's cooldown health.
    Health,
    /// A connection's model lockouts.
    Lockouts,
    /// A Claude account's usage-wall state.
    Wall,
}

impl StateKind {
    /// The key of `id`'s state of this kind.
    pub fn key(self, id: &str) -> String {
        let tag = match self {
            StateKind::Breaker => "b",
            StateKind::Health => "h",
            StateKind::Lockouts => "l",
            StateKind::Wall => "w",
        };
        format!("{tag}:{id}")
    }

    /// Its name in the `team_state` table (in-memory state team mode also stores).
    pub fn stored_name(self) -> Option<&'static str> {
        match self {
            StateKind::Lockouts => Some("lockouts"),
            StateKind::Wall => Some("wall"),
            StateKind::Breaker | StateKind::Health => None,
        }
    }
}

impl Notice {
    /// The key under which later notices replace earlier queued ones (the last
    /// state of a thing is all a receiver needs).
    pub fn coalesce_key(&self) -> String {
        match self {
            Notice::Breaker { provider, .. } => StateKind::Breaker.key(provider),
            Notice::Health { connection, .. } => StateKind::Health.key(connection),
            Notice::Lockouts { connection, .. } => StateKind::Lockouts.key(connection),
            Notice::Wall { connection, .. } => StateKind::Wall.key(connection),
            Notice::Reset { connection, .. } => format!("reset:{connection}"),
            Notice::Pin { session, provider, .. } => format!("p:{session}:{provider}"),
            Notice::PinsCleared { connection } => format!("pc:{}", connection.as_deref().unwrap_or("*")),
            Notice::Reload { what } => format!("r:{what:?}"),
        }
    }
}

impl Envelope {
    /// The notification payload, or `None` when it would exceed [`MAX_PAYLOAD`].
    pub fn encode(&self) -> Option<String> {
        let text = serde_json::to_string(self).ok()?;
        (text.len() <= MAX_PAYLOAD).then_some(text)
    }

    /// Reads a payload; `None` for anything else (another version's notice).
    pub fn decode(payload: &str) -> Option<Envelope> {
        serde_json::from_str(payload).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_oversized_ones_are_refused() {
        let e = Envelope {
            origin: "r1".into(),
            notice: Notice::Health {
                connection: "a".into(),
                provider: "anthropic".into(),
                at: UnixMillis(5),
                record: serde_json::json!({"state": "active"}),
            },
        };
        let text = e.encode().unwrap_or_default();
        assert!(text.contains("\"k\":\"health\"") && text.contains("\"o\":\"r1\""), "{text}");
        assert_eq!(Envelope::decode(&text), Some(e));
        let big = Envelope {
            origin: "r1".into(),
            notice: Notice::Lockouts {
                connection: "a".into(),
                provider: "p".into(),
                at: UnixMillis(1),
                table: serde_json::json!("x".repeat(MAX_PAYLOAD)),
            },
        };
        assert_eq!(big.encode(), None);
        assert_eq!(Envelope::decode("{\"o\":\"r\",\"k\":\"from-the-future\"}"), None);
    }
}

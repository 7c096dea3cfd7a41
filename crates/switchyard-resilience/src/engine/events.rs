//! Events the engine emits after each change, outside its locks. Each carries the
//! new persisted record of its key, so a persister can upsert one row off the hot
//! path; lockout events are informational (lockouts live in memory).

use switchyard_types::UnixMillis;

use crate::breaker::{BreakerRecord, BreakerTransition};
use crate::cooldown::{ConnectionHealth, CooldownChange};
use crate::lockout::LockoutChange;

/// One change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    /// A provider breaker changed state.
    Breaker {
        /// Provider id.
        provider: String,
        /// The change.
        transition: BreakerTransition,
        /// The record after it (persist to `domain_circuit_breakers`).
        record: BreakerRecord,
    },
    /// The window gate started cooling a provider.
    ProviderGate {
        /// Provider id.
        provider: String,
        /// End of the cooldown.
        cooling_until: UnixMillis,
    },
    /// A connection's cooldown fields changed.
    Cooldown {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// The change.
        change: CooldownChange,
        /// The fields after it (persist on the connection row).
        health: ConnectionHealth,
    },
    /// A model lockout changed.
    Lockout {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// The change.
        change: LockoutChange,
    },
}

impl EngineEvent {
    /// The stable `event` field for tracing (`breaker.opened`, `cooldown.started`, ...).
    pub fn name(&self) -> &'static str {
        use switchyard_types::resilience::BreakerStateName as S;
        match self {
            EngineEvent::Breaker { transition, .. } => match transition.to {
                S::Closed => "breaker.closed",
                S::Degraded => "breaker.degraded",
                S::Open => "breaker.opened",
                S::HalfOpen => "breaker.half_open",
            },
            EngineEvent::ProviderGate { .. } => "provider_gate.cooling",
            EngineEvent::Cooldown { change, .. } => match change {
                CooldownChange::Cooling { .. } => "cooldown.started",
                CooldownChange::Terminal(_) => "cooldown.terminal",
                CooldownChange::ErrorRecorded => "cooldown.error_recorded",
                CooldownChange::Deduplicated => "cooldown.deduplicated",
                CooldownChange::Cleared => "cooldown.cleared",
            },
            EngineEvent::Lockout { change, .. } => match change {
                LockoutChange::Locked { .. } => "lockout.locked",
                LockoutChange::Decayed { .. } => "lockout.decayed",
                LockoutChange::Cleared { .. } => "lockout.cleared",
            },
        }
    }

    /// Whether the event changes persisted state (breakers and connection fields).
    pub fn is_persistent(&self) -> bool {
        matches!(self, EngineEvent::Breaker { .. } | EngineEvent::Cooldown { .. })
    }
}

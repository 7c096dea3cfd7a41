//! State another replica decided (team mode, SPEC §9): a breaker record, a
//! connection's cooldown health or its lockout table, taken over as-is. Adopting
//! emits no event: the replica that made the transition already persisted and
//! announced it, and re-emitting would echo it back.
//!
//! Taking the other replica's record whole is what keeps backoff from being
//! counted twice: a failure here whose attempt was dispatched before the adopted
//! cooldown began is deduplicated by the same herd guard as a local one.

use super::{Engine, lock, read};
use crate::breaker::{BreakerRecord, BreakerState};
use crate::cooldown::ConnectionHealth;
use crate::lockout::LockoutTable;
use crate::outcome::AuthCategory;

impl Engine {
    /// Takes over a provider's breaker record. A half-open probe taken elsewhere is
    /// not ours to finish: the record is adopted with the probe free here.
    pub fn adopt_breaker(&self, provider: &str, mut record: BreakerRecord) {
        if let BreakerState::HalfOpen { probe_taken: Some(_) } = record.state {
            record.state = BreakerState::HalfOpen { probe_taken: None };
        }
        let entry = self.inner.provider(provider, AuthCategory::ApiKey);
        lock(&entry).breaker = record;
    }

    /// Takes over a connection's cooldown health (cooling, terminal, backoff level).
    pub fn adopt_health(&self, connection: &str, provider: &str, health: ConnectionHealth) {
        let entry = self.inner.connection(connection, provider, AuthCategory::ApiKey);
        lock(&entry).health = health;
    }

    /// Takes over a connection's model lockouts.
    pub fn adopt_lockouts(&self, connection: &str, provider: &str, table: LockoutTable) {
        let entry = self.inner.connection(connection, provider, AuthCategory::ApiKey);
        lock(&entry).lockouts = table;
    }

    /// A connection's current lockout table (to announce it after a change).
    pub fn lockout_table(&self, connection: &str) -> Option<LockoutTable> {
        read(&self.inner.connections).get(connection).map(|e| lock(e).lockouts.clone())
    }

    /// A connection's current health (to announce it).
    pub fn health_of(&self, connection: &str) -> Option<ConnectionHealth> {
        read(&self.inner.connections).get(connection).map(|e| lock(e).health.clone())
    }
}

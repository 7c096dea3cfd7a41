//! Snapshot and restore of the persisted state: provider breakers
//! (`domain_circuit_breakers`) and connection cooldown fields. Lockouts are in
//! memory by design and not included. A restored HalfOpen breaker gets its probe
//! slot back (no probe survives a restart).

use serde::{Deserialize, Serialize};

use super::{Engine, lock, read};
use crate::breaker::{BreakerRecord, BreakerState};
use crate::cooldown::ConnectionHealth;
use crate::error::{ResilienceError, Result};
use crate::outcome::AuthCategory;

/// The snapshot format version.
pub const SNAPSHOT_VERSION: u32 = 1;

/// One provider's breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerSnapshot {
    /// Provider id.
    pub provider: String,
    /// The record.
    pub record: BreakerRecord,
}

/// One connection's cooldown fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSnapshot {
    /// Connection id.
    pub connection: String,
    /// Provider id.
    pub provider: String,
    /// The fields.
    pub health: ConnectionHealth,
}

/// Everything that survives a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineSnapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// Breakers, sorted by provider.
    pub breakers: Vec<BreakerSnapshot>,
    /// Connections, sorted by id.
    pub connections: Vec<ConnectionSnapshot>,
}

impl Engine {
    /// The persisted state as of now.
    pub fn snapshot(&self) -> EngineSnapshot {
        let mut breakers: Vec<BreakerSnapshot> = read(&self.inner.providers)
            .iter()
            .map(|(name, e)| BreakerSnapshot { provider: name.to_string(), record: lock(e).breaker })
            .collect();
        breakers.sort_by(|a, b| a.provider.cmp(&b.provider));
        let mut connections: Vec<ConnectionSnapshot> = read(&self.inner.connections)
            .values()
            .map(|e| {
                let e = lock(e);
                ConnectionSnapshot {
                    connection: e.config.id.clone(),
                    provider: e.config.provider.clone(),
                    health: e.health.clone(),
                }
            })
            .collect();
        connections.sort_by(|a, b| a.connection.cmp(&b.connection));
        EngineSnapshot { version: SNAPSHOT_VERSION, breakers, connections }
    }

    /// Restores persisted state (call before serving, after `sync_connections`).
    /// Entries for unknown keys are created; known keys are overwritten.
    pub fn restore(&self, snapshot: &EngineSnapshot) -> Result<()> {
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(ResilienceError::UnsupportedSnapshotVersion(snapshot.version, SNAPSHOT_VERSION));
        }
        for b in &snapshot.breakers {
            let entry = self.inner.provider(&b.provider, AuthCategory::ApiKey);
            let mut record = b.record;
            if let BreakerState::HalfOpen { probe_taken: Some(_) } = record.state {
                record.state = BreakerState::HalfOpen { probe_taken: None };
            }
            lock(&entry).breaker = record;
        }
        for c in &snapshot.connections {
            let entry = self.inner.connection(&c.connection, &c.provider, AuthCategory::ApiKey);
            lock(&entry).health = c.health.clone();
        }
        Ok(())
    }
}

//! The immutable routing snapshot and its shared handle.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use switchyard_resilience::flow::FlowControl;
use switchyard_types::api::{ComboStrategy, ComboTarget, GatewaySettings};

use super::connection::Connection;
use super::memo::PlanMemo;
use crate::secrets::{KeyHash, parse_hash_hex};
use crate::store::{AliasRecord, ApiKeyRecord, ComboRecord, ConnectionRecord};

/// A client key as the request path sees it (hash only).
#[derive(Debug, Clone)]
pub struct ClientKey {
    /// Stable id, logged with each attempt (shared with the log rows).
    pub id: Arc<str>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Allowed connection ids; empty = all.
    pub allowed_connections: Vec<String>,
}

impl ClientKey {
    /// Whether this key may use connection `id`.
    pub fn allows(&self, id: &str) -> bool {
        self.allowed_connections.is_empty() || self.allowed_connections.iter().any(|c| c == id)
    }
}

/// A combo as routed.
#[derive(Debug, Clone)]
pub struct Combo {
    /// Strategy.
    pub strategy: ComboStrategy,
    /// Ordered targets.
    pub targets: Vec<ComboTarget>,
}

/// Everything the request path needs to route, in one immutable value.
#[derive(Debug, Default)]
pub struct RoutingTable {
    /// Connections by provider, each list in priority order (then id).
    pub by_provider: HashMap<String, Vec<Arc<Connection>>>,
    /// Connections by id.
    pub by_id: HashMap<String, Arc<Connection>>,
    /// Catalogue: model id → providers offering it, in order of their best priority.
    pub catalogue: HashMap<String, Vec<String>>,
    /// Combos by name.
    pub combos: HashMap<String, Combo>,
    /// Aliases: from → to.
    pub aliases: HashMap<String, String>,
    /// Client keys by hash.
    pub client_keys: HashMap<KeyHash, Arc<ClientKey>>,
    /// Gateway-wide settings (client auth policy).
    pub gateway: GatewaySettings,
    /// Plans already built from this snapshot.
    pub plans: PlanMemo,
}

impl RoutingTable {
    /// Builds a snapshot from store records. `connections` must be in priority order.
    /// Each connection's flow state comes from `flows` (configured with its limits,
    /// kept across rebuilds); connections no longer present are dropped from it.
    pub fn build(
        connections: &[ConnectionRecord],
        keys: &[ApiKeyRecord],
        combos: &[ComboRecord],
        aliases: &[AliasRecord],
        gateway: GatewaySettings,
        flows: &FlowControl,
    ) -> RoutingTable {
        let mut table = RoutingTable { gateway, ..RoutingTable::default() };
        for record in connections {
            let conn = Arc::new(Connection::from_record(record, flows));
            table.by_id.insert(conn.id.to_string(), conn.clone());
            table.by_provider.entry(conn.provider.to_string()).or_default().push(conn.clone());
            for model in &conn.models {
                let providers = table.catalogue.entry(model.clone()).or_default();
                if !providers.iter().any(|p| **p == *conn.provider) {
                    providers.push(conn.provider.to_string());
                }
            }
        }
        for key in keys {
            if let Some(hash) = parse_hash_hex(&key.key_hash) {
                table.client_keys.insert(
                    hash,
                    Arc::new(ClientKey {
                        id: Arc::from(key.id.as_str()),
                        scopes: key.scopes.clone(),
                        allowed_connections: key.allowed_connections.clone(),
                    }),
                );
            }
        }
        for combo in combos {
            table.combos.insert(
                combo.name.clone(),
                Combo { strategy: combo.strategy, targets: combo.targets.clone() },
            );
        }
        for alias in aliases {
            table.aliases.insert(alias.alias.clone(), alias.target.clone());
        }
        flows.retain(|id| table.by_id.contains_key(id));
        flows.strategies.retain(|name| table.combos.contains_key(name));
        table
    }

    /// Whether `name` is itself a combo, an alias or a catalogue model id (bare or
    /// as `provider/model`), by map lookups alone.
    pub fn names_exactly(&self, name: &str) -> bool {
        let bare = name.split_once('/').map_or(name, |(_, m)| m);
        self.combos.contains_key(name) || self.aliases.contains_key(name) || self.catalogue.contains_key(bare)
    }

    /// Every model id a client can send, sorted: combos, aliases, `provider/model`
    /// for each catalogue entry, and bare catalogue ids. Each with its owner.
    pub fn routable_models(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for name in self.combos.keys() {
            out.push((name.clone(), "combo".to_owned()));
        }
        for from in self.aliases.keys() {
            out.push((from.clone(), "alias".to_owned()));
        }
        for (model, providers) in &self.catalogue {
            if let Some(first) = providers.first() {
                out.push((model.clone(), first.clone()));
            }
            for provider in providers {
                out.push((format!("{provider}/{model}"), provider.clone()));
            }
        }
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }
}

/// The shared, atomically replaceable routing snapshot.
pub type SharedRouting = Arc<ArcSwap<RoutingTable>>;

//! `ManagementService`: every management operation, taking and returning
//! `switchyard-types` documents. The REST handlers (and later the desktop IPC
//! commands) are thin adapters over it.
//!
//! Writes validate the whole document first, then commit to SQLite, then rebuild
//! the routing snapshot, so the request path sees either the old or the new state.
//!
//! Concurrent writers (two UI pages, a script beside the UI) never lose an
//! acknowledged change: every read-modify-write runs under one write lock (so the
//! routing snapshot and the effective settings follow the stored order too), and
//! each stored write is a compare-and-swap on the document's version, which also
//! holds across processes sharing the database. A writer that names the version it
//! edited (`If-Match`, `expectedVersion`) gets `412 precondition_failed` when the
//! document changed in between, instead of overwriting that change.

mod agent_setup;
mod api_keys;
pub mod claude_login;
mod connections;
#[cfg(test)]
mod document_fuzz;
mod flow;
mod gateway_status;
mod import;
mod leases;
mod monitoring;
pub mod presets;
mod resilience_ops;
mod routes;
pub mod validate;

use crate::request_log::RequestLogSink;
use std::sync::Arc;

use switchyard_types::ErrorCode;
use switchyard_types::api::{GatewaySettings, Versioned};
use switchyard_types::status::ChangeTopic;

use switchyard_resilience::claude_wall::ClaudeWall;
use switchyard_resilience::{AuthCategory, ConnectionConfig};

use crate::clock::Clock;
use crate::control::Control;
use crate::errors::GatewayError;
use crate::resilience::Resilience;
use crate::routing::{RoutingTable, SharedRouting};
use crate::store::{Store, StoreError};

pub use connections::ConnectionUpsert;
pub use routes::Put;

/// Settings key of the gateway settings document.
pub const GATEWAY_SETTINGS_KEY: &str = "gateway";

/// Result of a management operation.
pub type MgmtResult<T> = Result<T, GatewayError>;

impl From<StoreError> for GatewayError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Stale { what, expected } => GatewayError::new(
                ErrorCode::PreconditionFailed,
                format!(
                    "{what} changed elsewhere since version {expected}; reload it and apply your change again"
                ),
            ),
            other => GatewayError::internal(other),
        }
    }
}

/// Refuses a write made to version `expected` of a document now at `current`
/// (a document that does not exist is at version 0).
pub(crate) fn check_version(what: &str, expected: Option<u64>, current: i64) -> MgmtResult<()> {
    let current = u64::try_from(current).unwrap_or(0);
    match expected {
        Some(expected) if expected != current => Err(GatewayError::new(
            ErrorCode::PreconditionFailed,
            format!(
                "{what} changed elsewhere (you edited version {expected}, it is now at version {current}); \
                 reload it and apply your change again"
            ),
        )),
        _ => Ok(()),
    }
}

/// A document and its version, for the API.
pub(crate) fn versioned<T>(doc: T, version: i64) -> Versioned<T> {
    Versioned { doc, version: u64::try_from(version).unwrap_or(0) }
}

/// The management operations over one store and routing snapshot.
#[derive(Clone)]
pub struct ManagementService {
    store: Store,
    routing: SharedRouting,
    clock: Arc<dyn Clock>,
    http: reqwest::Client,
    started_at: tokio::time::Instant,
    listen: String,
    resilience: Arc<Resilience>,
    claude_wall: Arc<ClaudeWall>,
    control: Arc<Control>,
    /// Serializes every read-modify-write of a management document.
    write_lock: Arc<tokio::sync::Mutex<()>>,
    /// The request log's buffer, flushed before the log is read.
    log: RequestLogSink,
    /// A batch service rebuilds the routing snapshot only when asked
    /// ([`ManagementService::reload_now`]), not after every write.
    defer_reload: bool,
}

impl ManagementService {
    /// A service over `store`, publishing into `routing`.
    #[expect(clippy::too_many_arguments, reason = "wires the gateway's shared parts; called at start only")]
    pub fn new(
        store: Store,
        routing: SharedRouting,
        clock: Arc<dyn Clock>,
        http: reqwest::Client,
        listen: String,
        resilience: Arc<Resilience>,
        claude_wall: Arc<ClaudeWall>,
        control: Arc<Control>,
    ) -> ManagementService {
        ManagementService {
            store,
            routing,
            clock,
            http,
            started_at: tokio::time::Instant::now(),
            listen,
            resilience,
            claude_wall,
            control,
            write_lock: Arc::new(tokio::sync::Mutex::new(())),
            log: RequestLogSink::new(),
            defer_reload: false,
        }
    }

    /// The same service reading the request log that `log` buffers (it flushes
    /// the buffer before every read of the log).
    pub fn with_log(self, log: RequestLogSink) -> ManagementService {
        ManagementService { log, ..self }
    }

    /// The same service writing through `store` (a batch store: every write joins
    /// one transaction). The routing snapshot and the settings in memory follow
    /// each write; after a rollback, [`ManagementService::reload`] and
    /// `Resilience::reload_from_store` restore them from the main store.
    ///
    /// A batch writes many items: it rebuilds the routing snapshot only on
    /// [`ManagementService::reload_now`] (an import of 300 connections would
    /// otherwise rebuild it 300 times).
    pub fn with_store(&self, store: Store) -> ManagementService {
        ManagementService { store, defer_reload: true, ..self.clone() }
    }

    /// Holds the write lock for one read-modify-write.
    async fn writing(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.write_lock.lock().await
    }

    /// The routing pause switch and the change feed.
    pub fn control(&self) -> &Arc<Control> {
        &self.control
    }

    /// The resilience runtime (engine and settings).
    pub fn resilience(&self) -> &Arc<Resilience> {
        &self.resilience
    }

    /// The store (for start-up tasks and tests).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The routing snapshot this service publishes.
    pub fn routing(&self) -> &SharedRouting {
        &self.routing
    }

    /// Rebuilds the routing snapshot from the store (deferred in a batch).
    pub async fn reload(&self) -> MgmtResult<()> {
        if self.defer_reload {
            return Ok(());
        }
        self.reload_now().await
    }

    /// Rebuilds the routing snapshot from the store, also in a batch (whose later
    /// items are validated against what it wrote so far).
    pub async fn reload_now(&self) -> MgmtResult<()> {
        let table = self.rebuild().await?;
        if !self.defer_reload {
            // Not inside a batch: its transaction would hold the write lock the
            // lease store waits for (the batch's owner reloads after the commit).
            // After the publish, and never failing the change it follows: it runs
            // again at the next reload and at start.
            if let Err(e) = self.reconcile_leases(&table).await {
                tracing::warn!(event = "lease.reconcile_failed", error = %e.message);
            }
        }
        self.control.notify(ChangeTopic::Connections);
        Ok(())
    }

    /// Rebuilds the routing snapshot after another replica changed the stored
    /// configuration (team mode): that replica already reconciled leases and
    /// announced the change, so this one only tells its own UIs.
    pub async fn reload_from_peer(&self) -> MgmtResult<()> {
        // Under the write lock: a rebuild that read the store just before a local
        // write committed must not publish its older snapshot after that write's.
        let _writing = self.writing().await;
        self.rebuild().await?;
        self.control.notify_local(ChangeTopic::Connections);
        Ok(())
    }

    /// Re-reads the resilience settings after another replica changed them (under
    /// the write lock, for the same reason as [`Self::reload_from_peer`]).
    pub async fn reload_settings_from_peer(&self) -> MgmtResult<()> {
        let _writing = self.writing().await;
        self.resilience.reload_from_store().await?;
        self.control.notify_local(ChangeTopic::Settings);
        Ok(())
    }

    /// Reads the configuration and publishes a new routing snapshot.
    async fn rebuild(&self) -> MgmtResult<Arc<RoutingTable>> {
        let connections = self.store.list_connections().await?;
        let keys = self.store.list_api_keys().await?;
        let combos = self.store.list_combos().await?;
        let aliases = self.store.list_aliases().await?;
        let gateway: GatewaySettings =
            self.store.get_setting(GATEWAY_SETTINGS_KEY).await?.unwrap_or_default();
        self.resilience.engine.sync_connections(connections.iter().map(|c| ConnectionConfig {
            id: c.id.clone(),
            provider: c.provider.clone(),
            category: AuthCategory::from_auth_kind(c.auth_kind),
            disable_cooling: false,
            quota_families: quota_families(c),
        }));
        let table =
            RoutingTable::build(&connections, &keys, &combos, &aliases, gateway, &self.resilience.flow);
        self.claude_wall.retain(&|id| table.by_id.contains_key(id));
        self.resilience.usage.retain(&|id| table.by_id.contains_key(id));
        let table = Arc::new(table);
        self.routing.store(table.clone());
        Ok(table)
    }

    /// The gateway settings.
    pub async fn gateway_settings(&self) -> MgmtResult<GatewaySettings> {
        Ok(self.store.get_setting(GATEWAY_SETTINGS_KEY).await?.unwrap_or_default())
    }

    /// Replaces the gateway settings.
    pub async fn put_gateway_settings(&self, settings: GatewaySettings) -> MgmtResult<GatewaySettings> {
        let _writing = self.writing().await;
        self.store.put_setting(GATEWAY_SETTINGS_KEY, &settings, self.clock.now_wall(), None).await?;
        self.reload().await?;
        Ok(settings)
    }
}

/// A connection's own quota families: `provider_specific.quotaFamilies` (model-id
/// prefix → family), else, for a Claude subscription, one family for every `claude-`
/// model (the usage window is the account's); `None` keeps the provider's built-ins.
fn quota_families(c: &crate::store::ConnectionRecord) -> Option<Vec<(String, String)>> {
    if let Some(map) = c.provider_specific.get("quotaFamilies").and_then(serde_json::Value::as_object) {
        let mut rules: Vec<(String, String)> =
            map.iter().filter_map(|(p, f)| f.as_str().map(|f| (p.clone(), f.to_owned()))).collect();
        // The longest prefix wins when several match.
        rules.sort_by_key(|r| std::cmp::Reverse(r.0.len()));
        return Some(rules);
    }
    (c.provider == "anthropic" && c.auth_kind == switchyard_types::AuthKind::Oauth)
        .then(|| vec![("claude-".to_owned(), "claude-subscription".to_owned())])
}

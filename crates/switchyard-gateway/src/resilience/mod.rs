//! The gateway's side of the resilience engine: the engine instance, its effective
//! settings (defaults < env < stored document, SPEC §5), validated settings changes,
//! and the persister that writes breaker and connection-cooldown transitions to
//! SQLite off the request path.
//!
//! Fail-open on persistence: a failed write is logged and the engine keeps running
//! on its in-memory state; a stored document that no longer validates is clamped.

mod persist;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use switchyard_resilience::flow::FlowControl;
use switchyard_resilience::{Clock, Engine, EngineEvent};
use switchyard_types::api::ValidationIssue;
use switchyard_types::settings::{
    EnvSource, ResilienceSettings, ResilienceSettingsPatch, UnreadableKind, layer, parse_patch,
    parse_patch_lenient,
};
use switchyard_types::{ErrorCode, UnixMillis};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::affinity::SessionAffinity;
use crate::leases::Leases;
use crate::routability::ConnectionTests;
use crate::usage::UsageBook;

use crate::control::Control;
use crate::errors::GatewayError;
use crate::store::{StateWrite, Store};
use crate::team::Team;
use switchyard_types::status::ChangeTopic;

/// Settings key of the stored resilience document.
pub const RESILIENCE_SETTINGS_KEY: &str = "resilience";

/// The engine and its settings.
pub struct Resilience {
    /// The engine (thread-safe; its hot-path calls take microseconds).
    pub engine: Arc<Engine>,
    /// Flow control: gates, live counts and combo strategies (SPEC §4.6).
    pub flow: Arc<FlowControl>,
    /// Session affinity pins (SPEC §4.4).
    pub affinity: Arc<SessionAffinity>,
    /// Exclusive session leases (SPEC §4.4).
    pub leases: Arc<Leases>,
    /// The latest Test result of each connection (its status shows a failed one).
    pub tests: Arc<ConnectionTests>,
    /// Each account's latest usage windows, read from its answers' headers.
    pub usage: Arc<UsageBook>,
    effective: ArcSwap<ResilienceSettings>,
    /// The stored document's version (0: never written), for `ETag`s and `If-Match`.
    version: AtomicU64,
    store: Store,
    env: Arc<dyn EnvSource + Send + Sync>,
}

/// Turns an engine event into a persisted write, if it changes persisted state.
fn to_write(event: &EngineEvent, at: UnixMillis) -> Option<StateWrite> {
    match event {
        EngineEvent::Breaker { provider, transition, record } => Some(StateWrite::Breaker {
            provider: provider.clone(),
            state: serde_json::to_value(transition.to).ok()?.as_str()?.to_owned(),
            record_json: serde_json::to_string(record).ok()?,
            at,
        }),
        EngineEvent::Cooldown { connection, provider, health, .. } => Some(StateWrite::Connection {
            connection: connection.clone(),
            provider: provider.clone(),
            record_json: serde_json::to_string(health).ok()?,
            at,
        }),
        EngineEvent::ProviderGate { .. } | EngineEvent::Lockout { .. } => None,
    }
}

/// Which UI topic an engine event invalidates.
fn topic_of(event: &EngineEvent) -> ChangeTopic {
    match event {
        EngineEvent::Breaker { .. } | EngineEvent::ProviderGate { .. } => ChangeTopic::Breakers,
        EngineEvent::Cooldown { .. } => ChangeTopic::Cooldowns,
        EngineEvent::Lockout { .. } => ChangeTopic::Lockouts,
    }
}

impl Resilience {
    /// Builds the engine with the effective settings and starts the persister.
    pub async fn start(
        store: Store,
        clock: Arc<dyn Clock>,
        env: Arc<dyn EnvSource + Send + Sync>,
        control: Arc<Control>,
        team: Option<Arc<Team>>,
        shutdown: CancellationToken,
    ) -> Result<(Arc<Resilience>, JoinHandle<()>), GatewayError> {
        let (tx, rx) = mpsc::channel::<StateWrite>(persist::QUEUE_CAPACITY);
        let leases = Arc::new(Leases::new(store.clone(), control.clone()));
        let sink_clock = clock.clone();
        let sink = Box::new(move |events: &[EngineEvent]| {
            let at = sink_clock.now_wall();
            for event in events {
                tracing::info!(event = event.name(), detail = ?event);
                control.notify(topic_of(event));
                if let Some(team) = &team {
                    team.engine_event(event, at);
                }
                if let Some(write) = to_write(event, at)
                    && tx.try_send(write).is_err()
                {
                    tracing::warn!(event = "resilience.persist_queue_full");
                }
            }
        });
        let engine = Arc::new(Engine::with_sink(clock.clone(), Some(sink)));
        let (stored, version) = load_stored(&store).await?;
        let layered = layer(env.as_ref(), stored);
        for note in &layered.notes {
            tracing::warn!(event = "settings.clamped", note = ?note);
        }
        engine.apply_settings(&layered.settings);
        let persister = tokio::spawn(persist::run(store.clone(), rx, shutdown));
        let resilience = Resilience {
            engine,
            flow: Arc::new(FlowControl::default()),
            affinity: Arc::new(SessionAffinity::default()),
            leases,
            tests: Arc::new(ConnectionTests::default()),
            usage: Arc::new(UsageBook::default()),
            effective: ArcSwap::from_pointee(layered.settings),
            version: AtomicU64::new(version),
            store,
            env,
        };
        resilience.flow_caps(&resilience.effective.load());
        Ok((Arc::new(resilience), persister))
    }

    /// Applies effective settings to the engine and the shared flow gates.
    fn apply(&self, settings: &ResilienceSettings) {
        self.engine.apply_settings(settings);
        self.flow_caps(settings);
    }

    fn flow_caps(&self, settings: &ResilienceSettings) {
        self.flow.set_shared_caps(
            settings.request_queue.global_concurrent_requests,
            &settings.provider_concurrency,
        );
    }

    /// Restores persisted breakers and connection fields (after the connections are
    /// synced). Rows for connections that no longer exist are ignored.
    pub async fn restore(&self, known_connections: &[String]) -> Result<(), GatewayError> {
        let breakers = self.store.load_breakers().await?;
        let connections = self.store.load_connection_health().await?;
        let snapshot = persist::snapshot_from_rows(&breakers, &connections, known_connections);
        self.engine.restore(&snapshot).map_err(GatewayError::internal)?;
        let pins = crate::affinity::persist::restore(&self.store, &self.affinity).await?;
        tracing::debug!(event = "affinity.restored", pins);
        let leases = self.leases.load().await?;
        tracing::debug!(event = "leases.restored", leases);
        Ok(())
    }

    /// The defaults under the environment's overrides (no stored document).
    pub fn defaults(&self) -> ResilienceSettings {
        layer(self.env.as_ref(), None).settings
    }

    /// The environment the settings (and presets) read.
    pub fn env(&self) -> &(dyn EnvSource + Send + Sync) {
        self.env.as_ref()
    }

    /// The effective settings.
    pub fn settings(&self) -> Arc<ResilienceSettings> {
        self.effective.load_full()
    }

    /// The stored document's version (0 when never written).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Validates `patch` against the stored document; on success stores it and
    /// applies the new effective settings. Nothing changes on any issue, or when
    /// `expected` names another version than the stored one (`412`). Callers
    /// serialize writes (the management service's write lock), so the in-memory
    /// settings always follow the stored order; the stored write is itself a
    /// compare-and-swap.
    pub async fn patch(
        &self,
        patch: ResilienceSettingsPatch,
        expected: Option<u64>,
    ) -> Result<Arc<ResilienceSettings>, GatewayError> {
        self.patch_in(&self.store, patch, expected).await
    }

    /// [`Resilience::patch`] written through `store` (a batch store, so the change
    /// commits with the rest of an import).
    pub async fn patch_in(
        &self,
        store: &Store,
        patch: ResilienceSettingsPatch,
        expected: Option<u64>,
    ) -> Result<Arc<ResilienceSettings>, GatewayError> {
        let (stored, version) = load_stored(store).await?;
        if let Some(expected) = expected
            && expected != version
        {
            return Err(stale_settings(expected, version));
        }
        let next = stored_base(stored).patched(&patch).map_err(GatewayError::validation)?;
        let now = self.engine.now();
        let at = i64::try_from(version).unwrap_or(i64::MAX);
        store.put_setting(RESILIENCE_SETTINGS_KEY, &next, now, Some(at)).await?;
        let as_patch = parse_patch(&serde_json::to_vec(&next).unwrap_or_default())
            .map_err(|issues| GatewayError::internal(format!("stored document unreadable: {issues:?}")))?;
        let layered = layer(self.env.as_ref(), Some(as_patch));
        self.apply(&layered.settings);
        self.effective.store(Arc::new(layered.settings));
        let (_, written) = load_stored(store).await?;
        self.version.store(written, Ordering::Release);
        Ok(self.settings())
    }

    /// Re-reads the stored document and applies it (after a batch that wrote it was
    /// rolled back, the effective settings follow the store again).
    pub async fn reload_from_store(&self) -> Result<(), GatewayError> {
        let (stored, version) = load_stored(&self.store).await?;
        let layered = layer(self.env.as_ref(), stored);
        self.apply(&layered.settings);
        self.effective.store(Arc::new(layered.settings));
        self.version.store(version, Ordering::Release);
        Ok(())
    }

    /// Parses a patch body (a JSON object), naming the offending field.
    pub fn parse_patch(body: &[u8]) -> Result<ResilienceSettingsPatch, GatewayError> {
        crate::errors::require_object(body)?;
        parse_patch(body).map_err(GatewayError::validation)
    }
}

/// The stored document, read as a patch so older or partial documents still load
/// (they are clamped by `layer`, never rejected). Read leniently: a field this version
/// does not know (written by a newer one) or cannot read (wrong type) is logged and
/// skipped, and every other field keeps its value; only an unreadable root (not a JSON
/// object) drops the whole document.
async fn load_stored(store: &Store) -> Result<(Option<ResilienceSettingsPatch>, u64), GatewayError> {
    let raw: Option<(serde_json::Value, i64)> = store.get_setting_versioned(RESILIENCE_SETTINGS_KEY).await?;
    let version = raw.as_ref().map_or(0, |(_, v)| u64::try_from(*v).unwrap_or(0));
    Ok((raw.and_then(|(v, _)| read_stored(&v)), version))
}

/// The stored document over the defaults, clamped into today's ranges: a value
/// stored out of range (by an older version with wider ranges, or by hand) is
/// brought into range like at start-up, instead of failing every later patch that
/// does not even touch it.
fn stored_base(stored: Option<ResilienceSettingsPatch>) -> ResilienceSettings {
    let mut base = ResilienceSettings::default();
    if let Some(s) = stored {
        base.merge(s);
    }
    let (base, notes) = base.clamp();
    for note in &notes {
        tracing::warn!(event = "settings.clamped", note = ?note);
    }
    base
}

/// The `412` of a settings write made to an older version.
fn stale_settings(expected: u64, current: u64) -> GatewayError {
    GatewayError::new(
        ErrorCode::PreconditionFailed,
        format!(
            "the resilience settings changed elsewhere (you edited version {expected}, they are now at \
             version {current}); reload them and apply your change again"
        ),
    )
}

/// [`parse_patch_lenient`] with each skipped field logged.
fn read_stored(doc: &serde_json::Value) -> Option<ResilienceSettingsPatch> {
    let (patch, skipped) = parse_patch_lenient(doc);
    for field in &skipped {
        let (path, message) = (&field.path, &field.message);
        match field.kind {
            UnreadableKind::UnknownField => {
                tracing::warn!(event = "settings.stored_unknown_field", %path, %message);
            }
            UnreadableKind::BadValue => tracing::warn!(event = "settings.stored_bad_value", %path, %message),
        }
    }
    if patch.is_none() {
        let issues: Vec<ValidationIssue> = skipped.into_iter().map(ValidationIssue::from).collect();
        tracing::warn!(event = "settings.stored_unreadable", ?issues);
    }
    patch
}

impl Resilience {
    /// A dry run of [`Resilience::patch`] (the config file validates before it writes):
    /// the same merge onto the stored document and the same validation, storing
    /// nothing. `Ok(None)` when the stored document already holds exactly the result,
    /// so applying the patch would change nothing.
    pub async fn preview_patch(
        &self,
        patch: &ResilienceSettingsPatch,
    ) -> Result<Option<ResilienceSettings>, GatewayError> {
        let (stored, _) = load_stored(&self.store).await?;
        let next = stored_base(stored.clone()).patched(patch).map_err(GatewayError::validation)?;
        let unchanged = stored.is_some() && stored == whole_as_patch(&next);
        Ok((!unchanged).then_some(next))
    }
}

/// A whole document as the patch that sets every field (how a stored one reads back).
fn whole_as_patch(settings: &ResilienceSettings) -> Option<ResilienceSettingsPatch> {
    serde_json::to_value(settings).ok().and_then(|v| parse_patch_lenient(&v).0)
}

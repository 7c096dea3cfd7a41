//! Management API documents: connections (providers), client API keys, combos,
//! aliases, health and the request log.
//!
//! The REST API and the desktop IPC exchange exactly these types. Responses never
//! carry secrets: a connection view says whether a secret is set, never what it is;
//! an API key's plaintext is returned once, when the gateway generated it.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::time::UnixMillis;
use crate::wire::{ApiFormat, AuthKind};

/// Deserialises a field that distinguishes "absent" (`None`) from "null"
/// (`Some(None)`), for patches that can clear a value.
fn double_option<'de, T, D>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// One provider connection (an account or key), as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// Stable id, chosen by the user or generated.
    pub id: String,
    /// Provider id: the breaker's scope (`anthropic`, `openai`, `glm`, ...).
    pub provider: String,
    /// The wire format the upstream speaks.
    pub api_format: ApiFormat,
    /// Display name.
    pub name: String,
    /// How the connection authenticates.
    pub auth_kind: AuthKind,
    /// Whether a secret (API key or access token) is stored. The secret itself is
    /// never returned.
    pub has_secret: bool,
    /// Whether a refresh token is stored (OAuth).
    pub has_refresh_token: bool,
    /// OAuth access-token expiry, when known.
    pub token_expires_at: Option<UnixMillis>,
    /// Base URL override; `None` uses the provider's default.
    pub base_url: Option<String>,
    /// The base URL requests actually go to.
    pub effective_base_url: String,
    /// Lower numbers are tried first.
    pub priority: i32,
    /// Disabled connections are never routed to.
    pub enabled: bool,
    /// Cap on concurrent requests to this connection; `None` means no cap.
    pub max_concurrent: Option<u32>,
    /// Per-model caps and per-connection queue budgets.
    pub rate_limit_overrides: RateLimitOverrides,
    /// Rate-limit protection forced on (`true`); `null` follows
    /// `requestQueue.autoEnableApiKeyProviders` (API-key connections).
    pub rate_limit_protection: Option<bool>,
    /// Models this connection serves (its catalogue), used to route bare model ids
    /// and listed by `GET /v1/models`.
    pub models: Vec<String>,
    /// Provider-specific options (for Claude: `lowPriorityMode`, `autoLimitReset`,
    /// `organizationUUID`).
    pub provider_specific: Value,
    /// When the connection was created.
    pub created_at: UnixMillis,
    /// When the connection was last changed.
    pub updated_at: UnixMillis,
    /// Claude OAuth connections: the usage-wall lane and limit-reset state.
    pub claude_wall: Option<crate::resilience::ClaudeWallView>,
    /// Its one derived status: whether it routes now, and why not.
    pub status: crate::routability::RoutabilityView,
    /// Its latest Test, when one ran since the gateway started (or last changed it).
    pub last_test: Option<crate::routability::LastTestView>,
    /// Its account's usage windows, from the upstream's latest response headers.
    pub usage: Option<crate::usage::UsageView>,
    /// Incremented by every change; also the `ETag`. Send it back as `If-Match`
    /// (REST) or `expectedVersion` (IPC) so a change made elsewhere is not lost.
    pub version: u64,
}

/// A new connection. Secrets go in here and are never returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCreateRequest {
    /// Stable id (`[A-Za-z0-9._-]`, 1–64 characters); generated when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Provider id (`[a-z0-9._-]`, 1–64 characters).
    pub provider: String,
    /// Required unless the provider implies it (`anthropic`, `openai`,
    /// `openai-compatible`).
    #[serde(default)]
    pub api_format: Option<ApiFormat>,
    /// Display name; defaults to the id.
    #[serde(default)]
    pub name: Option<String>,
    /// How the connection authenticates.
    pub auth_kind: AuthKind,
    /// The API key (`apiKey` auth).
    #[serde(default)]
    pub api_key: Option<String>,
    /// The OAuth access token (`oauth` auth).
    #[serde(default)]
    pub access_token: Option<String>,
    /// The OAuth refresh token.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// The OAuth access-token expiry.
    #[serde(default)]
    pub expires_at: Option<UnixMillis>,
    /// Base URL override (`http` or `https`). Required for providers without a
    /// well-known default.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Lower numbers are tried first (default 0).
    #[serde(default)]
    pub priority: Option<i32>,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Cap on concurrent requests (1–10000).
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    /// Per-model caps and per-connection queue budgets.
    #[serde(default)]
    pub rate_limit_overrides: Option<RateLimitOverrides>,
    /// `true` forces rate-limit protection on; `false` or absent follows the settings.
    #[serde(default)]
    pub rate_limit_protection: Option<bool>,
    /// Catalogue of model ids this connection serves.
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// Provider-specific options, a JSON object.
    #[serde(default)]
    pub provider_specific: Option<Value>,
}

/// A partial change to a connection; absent fields keep their value, `null` clears
/// a clearable one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionPatch {
    /// New display name.
    #[serde(default)]
    pub name: Option<String>,
    /// New wire format.
    #[serde(default)]
    pub api_format: Option<ApiFormat>,
    /// New auth kind (supply the matching secret too).
    #[serde(default)]
    pub auth_kind: Option<AuthKind>,
    /// Replace the API key.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Replace the OAuth access token.
    #[serde(default)]
    pub access_token: Option<String>,
    /// Replace (or with `null`, remove) the refresh token.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<String>)]
    pub refresh_token: Option<Option<String>>,
    /// Replace (or with `null`, forget) the token expiry.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<UnixMillis>)]
    pub expires_at: Option<Option<UnixMillis>>,
    /// Replace (or with `null`, remove) the base URL override.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<String>)]
    pub base_url: Option<Option<String>>,
    /// New priority.
    #[serde(default)]
    pub priority: Option<i32>,
    /// Enable or disable.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Replace (or with `null`, remove) the concurrency cap.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<u32>)]
    pub max_concurrent: Option<Option<u32>>,
    /// Replace the per-model caps and queue budgets (an empty object clears them).
    #[serde(default)]
    pub rate_limit_overrides: Option<RateLimitOverrides>,
    /// `true` forces rate-limit protection on; `false` or `null` follows the settings.
    #[serde(default, deserialize_with = "double_option")]
    #[specta(optional, type = Option<bool>)]
    pub rate_limit_protection: Option<Option<bool>>,
    /// Replace the model catalogue.
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// Merge these keys into the provider-specific options (`null` removes a key).
    #[serde(default)]
    pub provider_specific: Option<Value>,
}

/// The outcome of `POST /api/providers/{id}/test`: one small real request upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionTestResult {
    /// Whether the upstream accepted the credentials.
    pub ok: bool,
    /// The upstream's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Round-trip time in milliseconds.
    pub latency_ms: u32,
    /// What happened, in words.
    pub message: String,
}

/// A client API key as the API shows it (never the key itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    /// Stable id (used in the request log).
    pub id: String,
    /// Display name, unique.
    pub name: String,
    /// Scopes granted (e.g. `lease:exclusive`).
    pub scopes: Vec<String>,
    /// Connections this key may use; empty means all.
    pub allowed_connections: Vec<String>,
    /// When the key was created.
    pub created_at: UnixMillis,
}

/// A new client API key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiKeyCreateRequest {
    /// Display name, unique (1–64 characters).
    pub name: String,
    /// The key to accept (at least 16 characters); generated when absent.
    #[serde(default)]
    pub key: Option<String>,
    /// Scopes granted.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Connections this key may use; empty means all.
    #[serde(default)]
    pub allowed_connections: Vec<String>,
}

/// The created key. `secret` is present only when the gateway generated the key:
/// it is shown this once and stored only as a hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyCreatedResult {
    /// The stored key's view.
    pub key: ApiKeyView,
    /// The generated plaintext key, shown once.
    pub secret: Option<String>,
}

/// How a combo orders its targets for each request (SPEC §4.6). Every strategy
/// only orders: targets that the resilience engine rules out (breaker, cooldown,
/// lockout) are skipped whatever the order, and a target whose concurrency gate is
/// full gives way to the next free one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum ComboStrategy {
    /// Ordered fallback: the first healthy target wins, later ones are fallbacks.
    Priority,
    /// Each request starts one target further along the list than the last.
    RoundRobin,
    /// The first target is drawn at random in proportion to `weight`; the rest
    /// follow by descending weight. Weight 0 is never drawn (unless all are 0).
    Weighted,
    /// Stay on one target until it is ruled out (cooling, locked, failing), then
    /// move on to the next and stay there: one account's quota is drained before the
    /// next one's is touched.
    FillFirst,
    /// The target with the fewest requests in flight first (ties: fewest sent).
    LeastUsed,
    /// A uniformly random order.
    Random,
    /// Power of two choices: of two targets drawn at random, the one with fewer
    /// requests in flight goes first.
    P2c,
    /// The target whose quota window resets soonest first (from the rate-limit
    /// reset headers of its last answers); targets with no known reset last.
    ResetAware,
}

impl ComboStrategy {
    /// Every strategy, in the order the UI lists them.
    pub const ALL: [ComboStrategy; 8] = [
        ComboStrategy::Priority,
        ComboStrategy::RoundRobin,
        ComboStrategy::Weighted,
        ComboStrategy::FillFirst,
        ComboStrategy::LeastUsed,
        ComboStrategy::Random,
        ComboStrategy::P2c,
        ComboStrategy::ResetAware,
    ];

    /// The wire name (`round-robin`).
    pub fn as_str(self) -> &'static str {
        match self {
            ComboStrategy::Priority => "priority",
            ComboStrategy::RoundRobin => "round-robin",
            ComboStrategy::Weighted => "weighted",
            ComboStrategy::FillFirst => "fill-first",
            ComboStrategy::LeastUsed => "least-used",
            ComboStrategy::Random => "random",
            ComboStrategy::P2c => "p2c",
            ComboStrategy::ResetAware => "reset-aware",
        }
    }
}

/// One target of a combo: `provider/model`, a bare model id, or the name of another
/// combo (whose targets take its place, in its own order), optionally pinned to one
/// connection of that provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboTarget {
    /// `provider/model`, a bare model id, or another combo's name.
    pub model: String,
    /// Pin to this connection id.
    #[serde(default)]
    pub connection: Option<String>,
    /// Share of the draw for the `weighted` strategy (0–1000; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub weight: Option<u32>,
}

/// Per-connection flow-control overrides (SPEC §2, §4.6). Absent fields fall back
/// to the settings document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitOverrides {
    /// A second cap on concurrent requests to this connection (1–10000); the
    /// stricter of this and `maxConcurrent` applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub max_concurrent: Option<u32>,
    /// Caps per upstream model id (after routing: `glm-5`, not `zai/glm-5`), 1–10000.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[specta(optional)]
    pub model_concurrency: std::collections::BTreeMap<String, u32>,
    /// This connection's queue-wait budget, ms (1–86400000); overrides
    /// `requestQueue.maxWaitMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub max_wait_ms: Option<u32>,
    /// This connection's execution bound after dispatch, ms (1–86400000);
    /// overrides `requestQueue.executionMaxWaitMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub execution_max_wait_ms: Option<u32>,
}

impl RateLimitOverrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        self == &RateLimitOverrides::default()
    }
}

/// One concurrency gate's live state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct GateView {
    /// The cap.
    pub cap: u32,
    /// Requests holding a slot.
    pub in_flight: u32,
    /// Requests waiting for a slot.
    pub queued: u32,
}

/// A per-model gate of a connection, live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ModelGateView {
    /// Upstream model id.
    pub model: String,
    /// The gate.
    pub gate: GateView,
}

/// A connection's flow control, live (`GET /api/rate-limits`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionFlowView {
    /// Connection id.
    pub connection_id: String,
    /// Provider id.
    pub provider: String,
    /// Display name.
    pub name: String,
    /// Requests in flight on this connection (capped or not).
    pub in_flight: u32,
    /// Requests waiting in this connection's queue.
    pub queued: u32,
    /// The connection gate (the stricter of `maxConcurrent` and
    /// `rateLimitOverrides.maxConcurrent`), when there is one.
    pub gate: Option<GateView>,
    /// Per-model gates.
    pub models: Vec<ModelGateView>,
    /// Whether rate-limit protection is on for this connection (forced, or an
    /// API-key connection under `requestQueue.autoEnableApiKeyProviders`).
    pub protected: bool,
    /// Whether it is forced on by the connection itself.
    pub protection_forced: bool,
    /// The upstream asked for a pause: nothing is dispatched here before then.
    pub paced_until: Option<crate::UnixMillis>,
    /// The queue-wait budget in force for this connection, ms.
    pub max_wait_ms: u32,
    /// The execution bound in force for this connection, ms.
    pub execution_max_wait_ms: u32,
    /// Client sessions pinned to this connection now (session affinity, SPEC §4.4).
    pub pinned_sessions: u32,
}

/// One session-affinity pin (SPEC §4.4): a client session kept on one connection
/// of a provider. The session is shown as the first characters of its hash, never
/// as the id the client sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct SessionPinView {
    /// The session's hash, shortened.
    pub session: String,
    /// Provider id.
    pub provider: String,
    /// The pinned connection.
    pub connection: String,
    /// When the session was pinned to this connection.
    pub pinned_at: crate::UnixMillis,
    /// The session's last request.
    pub last_seen_at: crate::UnixMillis,
    /// When the pin lapses unless the session sends another request.
    pub expires_at: crate::UnixMillis,
}

/// `GET /api/sessions`: the live pins and the TTL in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct SessionPinsView {
    /// `sessionAffinityTtlMs` (0: affinity is off and nothing is pinned).
    pub ttl_ms: u32,
    /// Live pins, most recent first.
    pub pins: Vec<SessionPinView>,
}

/// `DELETE /api/sessions`: forget the pins on one connection, or all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionPinsClear {
    /// Only the pins on this connection; absent: every pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub connection: Option<String>,
}

/// The answer to [`SessionPinsClear`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct SessionPinsCleared {
    /// Pins removed.
    pub removed: u32,
}

/// `POST /api/providers/import-claude-login`: add (or refresh) a Claude subscription
/// connection from Claude Code's own login on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaudeLoginImportRequest {
    /// The connection id to create or refresh (default `claude-login`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub id: Option<String>,
    /// Claude Code's credentials file (default `~/.claude/.credentials.json` of
    /// the user the gateway runs as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[specta(optional)]
    pub path: Option<String>,
}

/// The answer to [`ClaudeLoginImportRequest`]. Tokens are never returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeLoginImportResult {
    /// `created`, `updated` or `unchanged`.
    pub change: String,
    /// The subscription the login belongs to (`pro`, `max`), when the file says.
    pub subscription: Option<String>,
    /// The connection as it is now (its token expiry in `tokenExpiresAt`).
    pub connection: ConnectionView,
}

/// Whether an agent is set up to use this gateway (`GET /api/setup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct AgentSetupView {
    /// `claude-code` or `codex`.
    pub agent: String,
    /// The agent's config file.
    pub path: String,
    /// Switchyard set it up (a backup to undo to exists).
    pub configured: bool,
}

/// The answer to `POST /api/setup/{agent}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct AgentSetupResult {
    /// `claude-code` or `codex`.
    pub agent: String,
    /// The file written.
    pub path: String,
    /// Where its previous state is kept for undo.
    pub backup_path: String,
    /// The base URL the agent now uses.
    pub base_url: String,
    /// The client key made for it (its name; the key itself is only in the file).
    pub key_name: String,
}

/// The answer to `DELETE /api/setup/{agent}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct AgentUndoResult {
    /// `claude-code` or `codex`.
    pub agent: String,
    /// The file put back.
    pub path: String,
    /// `true`: restored byte for byte; `false`: it did not exist before and was removed.
    pub restored: bool,
}

/// One active exclusive session lease (SPEC §4.4). The owner token is never
/// shown, not even hashed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LeaseView {
    /// The lease id (for `DELETE /api/leases/{id}`).
    pub id: u32,
    /// The client key that holds it.
    pub key_id: String,
    /// That key's name.
    pub key_name: Option<String>,
    /// Provider id.
    pub provider: String,
    /// The leased connection.
    pub connection: String,
    /// The fencing generation its requests must present.
    pub generation: u32,
    /// First acquired.
    pub acquired_at: crate::UnixMillis,
    /// Last renewed.
    pub renewed_at: crate::UnixMillis,
    /// Lapses then unless renewed.
    pub expires_at: crate::UnixMillis,
}

/// `GET /api/leases`: the active exclusive leases, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LeasesView {
    /// Active leases.
    pub leases: Vec<LeaseView>,
}

/// The answer to `DELETE /api/leases/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LeaseReleased {
    /// Leases released (1; a lease that is not active is a 404).
    pub released: u32,
}

/// `POST /api/rate-limits`: force a connection's rate-limit protection on
/// (`enabled: true`) or back to following the settings (`false`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitToggle {
    /// The connection.
    pub connection_id: String,
    /// Force protection on.
    pub enabled: bool,
}

/// The answer to [`RateLimitToggle`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitToggleResult {
    /// Always true (errors are management errors).
    pub success: bool,
    /// The connection.
    pub connection_id: String,
    /// What was asked.
    pub enabled: bool,
    /// Whether protection is on for it now (forced, or by the settings).
    pub protected: bool,
}

/// `GET /api/rate-limits`: every connection's flow control, live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitsView {
    /// One entry per connection, in priority order.
    pub connections: Vec<ConnectionFlowView>,
    /// The gateway-wide gate (`requestQueue.globalConcurrentRequests`), when set.
    pub global: Option<GateView>,
    /// The provider gates (`providerConcurrency`), by provider id.
    pub providers: Vec<ProviderGateView>,
}

/// A provider's shared gate, live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ProviderGateView {
    /// Provider id.
    pub provider: String,
    /// The gate.
    pub gate: GateView,
}

/// A named list of targets with a routing strategy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboView {
    /// The name clients put in `model` (`[A-Za-z0-9_/.-]`, 1–128 characters).
    pub name: String,
    /// How targets are ordered.
    pub strategy: ComboStrategy,
    /// Targets in order (1–64).
    pub targets: Vec<ComboTarget>,
}

/// A management document with its version: the document's own fields and
/// `version`, which every change increments (also sent as the `ETag`). A write that
/// sends it back (`If-Match` over REST, `expectedVersion` over IPC) is refused with
/// `412 precondition_failed` when the document changed in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Versioned<T> {
    /// The document.
    #[serde(flatten)]
    pub doc: T,
    /// Its version.
    pub version: u64,
}

/// A user alias: a model name that routes to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasView {
    /// The name clients send.
    pub from: String,
    /// What it routes to: `provider/model`, a bare model id or a combo name.
    pub to: String,
}

/// Per-provider summary in the health document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ProviderHealthView {
    /// Provider id.
    pub provider: String,
    /// Connections configured.
    pub connections: u32,
    /// Connections enabled.
    pub enabled_connections: u32,
}

/// `GET /api/monitoring/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct HealthView {
    /// `ok` while the gateway serves requests.
    pub status: String,
    /// Gateway version.
    pub version: String,
    /// The address the gateway listens on.
    pub listen: String,
    /// Milliseconds since start.
    // `i32` only spells the TypeScript `number` (see `UnixMillis` on why not `f64`).
    #[specta(type = i32)]
    pub uptime_ms: f64,
    /// One entry per provider with at least one connection.
    pub providers: Vec<ProviderHealthView>,
    /// Every provider breaker the engine knows (state, failure counts, retry-after).
    pub breakers: Vec<crate::resilience::ProviderBreakerView>,
    /// Connections currently cooling down or in a terminal state.
    pub connections_out_of_rotation: u32,
    /// Active model lockouts.
    pub active_lockouts: u32,
    /// Every connection's derived status, in routing order.
    pub connections: Vec<crate::routability::ConnectionRoutabilityView>,
    /// Every Claude OAuth connection's usage-wall state.
    pub claude_accounts: Vec<ClaudeAccountView>,
    /// `ok` while the database answers; `unavailable` when a team-mode replica lost
    /// its shared Postgres (it keeps routing on its last known state meanwhile).
    pub database: String,
    /// Where the state lives: `sqlite` (this machine's file) or `postgres` (team mode).
    pub database_backend: String,
    /// This replica's id in team mode (`None` with SQLite).
    pub replica: Option<String>,
}

/// One Claude OAuth connection's usage-wall state, in the health document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeAccountView {
    /// Connection id.
    pub connection: String,
    /// Lane and limit-reset state.
    pub wall: crate::resilience::ClaudeWallView,
}

/// One upstream attempt in the request log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RequestLogEntryView {
    /// Row id (increasing).
    // `i32` only spells the TypeScript `number` (see `UnixMillis` on why not `f64`).
    #[specta(type = i32)]
    pub id: f64,
    /// When the attempt started.
    pub at: UnixMillis,
    /// Id shared by all attempts of one client request.
    pub request_id: String,
    /// The client API key's id (never the key).
    pub api_key_id: Option<String>,
    /// The client route (`/v1/messages`, ...).
    pub route: String,
    /// Provider tried.
    pub provider: String,
    /// Connection tried.
    pub connection_id: String,
    /// Upstream model id.
    pub model: String,
    /// Upstream HTTP status, when one arrived.
    pub status: Option<u16>,
    /// Milliseconds until the attempt ended (stream end for streams).
    pub latency_ms: u32,
    /// Response bytes relayed or read.
    // `i32` only spells the TypeScript `number` (see `UnixMillis` on why not `f64`).
    #[specta(type = i32)]
    pub bytes: f64,
    /// Why the attempt failed (`connect`, `timeout`, `http_503`, `stream_interrupted`,
    /// `client_disconnected`, ...); `None` on success.
    pub error_kind: Option<String>,
    /// Tokens, when the upstream reported them.
    pub tokens: Option<TokenUsageView>,
}

/// Token counts an upstream reported for one answer. `input` excludes cached tokens
/// (OpenAI's counts, which include them, are converted), so the whole prompt is
/// `input + cacheRead + cacheWrite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageView {
    /// Uncached input tokens.
    pub input: u32,
    /// Output tokens (reasoning included).
    pub output: u32,
    /// Input tokens read from the prompt cache.
    pub cache_read: u32,
    /// Input tokens written to the prompt cache.
    pub cache_write: u32,
}

/// Query of `GET /api/logs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogsQuery {
    /// At most this many rows, newest first (1–1000, default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only rows with an id below this (for paging).
    #[serde(default)]
    #[specta(type = Option<i32>)]
    pub before_id: Option<f64>,
}

/// One problem with a submitted document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ValidationIssue {
    /// JSON pointer to the offending field (`/targets/0/model`).
    pub path: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// The error document of the management API (and, later, of IPC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ManagementError {
    /// Stable machine code.
    pub code: crate::ErrorCode,
    /// Human explanation.
    pub message: String,
    /// Every bad field, for validation failures.
    pub issues: Vec<ValidationIssue>,
}

/// Gateway-wide settings that are not resilience settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewaySettings {
    /// Accept inference requests without a client key when they come from a
    /// loopback address. Off by default: any local process could otherwise spend
    /// the user's provider quota.
    #[serde(default)]
    pub allow_unauthenticated_loopback: bool,
}

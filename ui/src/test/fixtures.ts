// Test documents shaped like the gateway's answers.
import type {
  ApiKeyView,
  ComboView,
  ConnectionFlowView,
  ConnectionCooldownView,
  ConnectionView,
  DesktopPrefs,
  GatewayStatusView,
  HealthView,
  LeaseView,
  ModelLockoutSettings,
  ModelLockoutView,
  MonitoringSummaryView,
  ProviderBreakerView,
  ProviderErrorRule,
  ProviderPresetView,
  RateLimitsView,
  RequestCountsView,
  RequestDetailView,
  RequestEntryView,
  RequestLogEntryView,
  ResilienceSettings,
  RoutabilityView,
  UsageView,
  SessionPinView,
  SettingsRanges,
  Versioned,
} from "../ipc/bindings";
import { DEFAULT_RESILIENCE_SETTINGS, SETTINGS_RANGES } from "../ipc/bindings";

export const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

export const gatewayStatus = (over: Partial<GatewayStatusView> = {}): GatewayStatusView => ({
  baseUrl: "http://127.0.0.1:7821",
  listen: "127.0.0.1:7821",
  version: "0.1.0",
  paused: false,
  clientKeyRequired: true,
  ...over,
});

/** A connection's derived status: in rotation unless `over` says otherwise. */
export const routability = (over: Partial<RoutabilityView> = {}): RoutabilityView => ({
  state: "routable",
  routable: true,
  label: "Active",
  detail: "In rotation.",
  until: null,
  lockedModels: [],
  ...over,
});

/** The status of a connection whose provider's breaker is open (for 60 s more). */
export const breakerOpen = (provider = "glm", over: Partial<RoutabilityView> = {}): RoutabilityView =>
  routability({
    state: "breaker-open",
    routable: false,
    label: "Breaker open",
    detail: `Provider '${provider}' failed 2 times in a row (the upstream failed (5xx)); no connection of it is tried until a probe is allowed.`,
    until: Date.now() + 60_000,
    ...over,
  });

/** The status of a connection cooling down after a 429 for `ms` more. */
export const cooling = (ms = 125_000, over: Partial<RoutabilityView> = {}): RoutabilityView =>
  routability({
    state: "cooling",
    routable: false,
    label: "Cooling",
    detail: "Cooling down: rate limited by the upstream (HTTP 429). Back in rotation at the time shown.",
    until: Date.now() + ms,
    ...over,
  });

/** A Claude account's usage windows: 5 h at 87.3 % (resets in 2 h), 7 d at 31 % (in 4 days). */
export const usage = (over: Partial<UsageView> = {}): UsageView => ({
  source: "claude-unified",
  observedAt: Date.now() - 60_000,
  status: "allowed_warning",
  bindingWindow: "5h",
  windows: [
    { window: "5h", windowMinutes: 300, usedPermille: 873, resetsAt: Date.now() + 2 * 3_600_000, status: "allowed_warning" },
    { window: "7d", windowMinutes: 10_080, usedPermille: 310, resetsAt: Date.now() + 4 * 86_400_000, status: "allowed" },
  ],
  ...over,
});

export const connection = (over: Partial<ConnectionView> = {}): ConnectionView => ({
  id: "glm-main",
  provider: "glm",
  apiFormat: "openai",
  name: "GLM main",
  authKind: "api_key",
  hasSecret: true,
  hasRefreshToken: false,
  tokenExpiresAt: null,
  baseUrl: "https://open.bigmodel.cn/api/paas/v4",
  effectiveBaseUrl: "https://open.bigmodel.cn/api/paas/v4",
  priority: 0,
  enabled: true,
  maxConcurrent: null,
  rateLimitOverrides: {},
  rateLimitProtection: null,
  models: ["glm-5"],
  providerSpecific: {},
  createdAt: NOW - 86_400_000,
  updatedAt: NOW - 3_600_000,
  claudeWall: null,
  status: routability(),
  lastTest: null,
  usage: null,
  version: 1,
  ...over,
});

/** A combo as `combos_list` answers it (with its version). */
export const combo = (over: Partial<Versioned<ComboView>> = {}): Versioned<ComboView> => ({
  name: "coding",
  strategy: "priority",
  targets: [{ model: "glm/glm-5", connection: null }],
  version: 1,
  ...over,
});

/** One connection's live flow state as `rate_limits_get` lists it. */
export const flow = (over: Partial<ConnectionFlowView> = {}): ConnectionFlowView => ({
  connectionId: "glm-main",
  provider: "glm",
  name: "GLM main",
  inFlight: 0,
  queued: 0,
  gate: null,
  models: [],
  protected: true,
  protectionForced: false,
  pacedUntil: null,
  maxWaitMs: 30_000,
  executionMaxWaitMs: 600_000,
  pinnedSessions: 0,
  ...over,
});

/**
 * The live flow document as `rate_limits_get` answers it: `connections`, and the
 * shared gates, which exist only for the caps that are set (none by default).
 */
export const rateLimits = (over: Partial<RateLimitsView> = {}): RateLimitsView => ({
  connections: [],
  global: null,
  providers: [],
  ...over,
});

/** One session-affinity pin as `sessions_list` lists it (live: it expires in 10 min). */
export const sessionPin = (over: Partial<SessionPinView> = {}): SessionPinView => ({
  session: "3f9a0c1d2e4b",
  provider: "glm",
  connection: "glm-main",
  pinnedAt: Date.now() - 300_000,
  lastSeenAt: Date.now() - 180_000,
  expiresAt: Date.now() + 600_000,
  ...over,
});

/** One exclusive lease as `leases_list` lists it (acquired 5 min ago, lapses in 90 s). */
export const lease = (over: Partial<LeaseView> = {}): LeaseView => ({
  id: 1,
  keyId: "key-1",
  keyName: "agent",
  provider: "glm",
  connection: "glm-main",
  generation: 1,
  acquiredAt: Date.now() - 300_000,
  renewedAt: Date.now() - 30_000,
  expiresAt: Date.now() + 90_000,
  ...over,
});

export const claudeConnection = (over: Partial<ConnectionView> = {}): ConnectionView =>
  connection({
    id: "claude-max",
    provider: "anthropic",
    apiFormat: "anthropic",
    name: "Claude Max",
    authKind: "oauth",
    hasRefreshToken: true,
    baseUrl: null,
    effectiveBaseUrl: "https://api.anthropic.com",
    models: [],
    providerSpecific: { lowPriorityMode: false, autoLimitReset: true },
    claudeWall: {
      laneActiveUntil: Date.now() + 3_600_000,
      lastSlowStatus: "active",
      lastLaneEnd: null,
      coolOffUntil: null,
      budgetExhaustedUntil: null,
      lastResetResult: "already_used",
      nextResetAvailableAt: Date.now() + 5 * 86_400_000,
    },
    ...over,
  });

export const cooldown = (over: Partial<ConnectionCooldownView> = {}): ConnectionCooldownView => ({
  connection: "glm-main",
  provider: "glm",
  status: "active",
  rateLimitedUntil: null,
  remainingMs: 0,
  backoffLevel: 0,
  lastErrorKind: null,
  lastError: null,
  errorCode: null,
  lastErrorAt: null,
  lockouts: [],
  ...over,
});

export const lockout = (over: Partial<ModelLockoutView> = {}): ModelLockoutView => ({
  provider: "glm",
  connection: "glm-main",
  model: "glm-5",
  scope: "exact",
  reason: "server_error",
  expiresAt: Date.now() + 120_000,
  remainingMs: 120_000,
  failureCount: 2,
  ...over,
});

export const breaker = (over: Partial<ProviderBreakerView> = {}): ProviderBreakerView => ({
  provider: "anthropic",
  state: "CLOSED",
  failureCount: 0,
  degradationThreshold: 5,
  failureThreshold: 8,
  lastFailureAt: null,
  lastFailureKind: null,
  openCycles: 0,
  retryAfterMs: 0,
  openUntil: null,
  gateCoolingUntil: null,
  ...over,
});

/** An operator error rule as the gateway stores it (unset fields as null). */
export const errorRule = (over: Partial<ProviderErrorRule> = {}): ProviderErrorRule => ({
  provider: "anthropic",
  status: 429,
  match: "weekly limit",
  scope: "connection",
  reason: null,
  cooldownMs: null,
  ...over,
});

export const apiKey = (over: Partial<ApiKeyView> = {}): ApiKeyView => ({
  id: "key-1",
  name: "laptop",
  scopes: [],
  allowedConnections: [],
  createdAt: NOW,
  ...over,
});

export const requestCounts = (over: Partial<RequestCountsView> = {}): RequestCountsView => ({
  requests: 0,
  served: 0,
  servedAfterFailover: 0,
  errors: 0,
  attempts: 0,
  failedAttempts: 0,
  ...over,
});

export const summary = (over: Partial<MonitoringSummaryView> = {}): MonitoringSummaryView => ({
  clientsLastHour: requestCounts(),
  clientsLastDay: requestCounts(),
  attemptsLastHour: 0,
  failedAttemptsLastHour: 0,
  attemptsLastDay: 0,
  failedAttemptsLastDay: 0,
  recentErrors: [],
  ...over,
});

/** One client request as `requests_list` lists it (served by glm-main, 2 s ago). */
export const requestEntry = (over: Partial<RequestEntryView> = {}): RequestEntryView => ({
  requestId: "req-1",
  at: Date.now() - 2_000,
  apiKeyId: "key-1",
  route: "/v1/chat/completions",
  model: "glm-5",
  status: 200,
  outcome: "served",
  errorCode: null,
  connection: "glm-main",
  attempts: 1,
  latencyMs: 420,
  ...over,
});

/** One upstream attempt of the request log. */
export const attempt = (over: Partial<RequestLogEntryView> = {}): RequestLogEntryView => ({
  id: 1,
  at: Date.now() - 2_000,
  requestId: "req-1",
  apiKeyId: "key-1",
  route: "/v1/chat/completions",
  provider: "glm",
  connectionId: "glm-main",
  model: "glm-5",
  status: 200,
  latencyMs: 400,
  bytes: 1234,
  errorKind: null,
  tokens: { input: 120, output: 40, cacheRead: 900, cacheWrite: 0 },
  ...over,
});

/** A request that failed over: glm-main answered 503, glm-backup served it. */
export const failedOverDetail = (): RequestDetailView => ({
  request: requestEntry({
    requestId: "req-2",
    outcome: "served-after-failover",
    connection: "glm-backup",
    attempts: 2,
    latencyMs: 910,
  }),
  attempts: [
    attempt({ id: 7, requestId: "req-2", status: 503, latencyMs: 300, bytes: 87, errorKind: "server_error", tokens: null }),
    attempt({ id: 8, requestId: "req-2", connectionId: "glm-backup", status: 200, latencyMs: 600, bytes: 2048 }),
  ],
  route: {
    resolvedAs: "catalogue",
    strategy: "priority",
    candidates: [
      { provider: "glm", connection: "glm-main", model: "glm-5", fate: "failed", reason: "the upstream failed (5xx) (HTTP 503)", rank: 1 },
      { provider: "glm", connection: "glm-backup", model: "glm-5", fate: "served", reason: null, rank: 2 },
      { provider: "glm", connection: "glm-old", model: "glm-5", fate: "excluded", reason: "cooling down: rate limited by the upstream", rank: null },
    ],
    notes: ["Session pinned to glm-main."],
  },
});

/** The GLM preset as `presets_list` lists it. */
export const preset = (over: Partial<ProviderPresetView> = {}): ProviderPresetView => ({
  id: "glm",
  label: "GLM (Z.ai), OpenAI-compatible endpoint",
  provider: "glm",
  apiFormat: "openai",
  authKind: "api_key",
  baseUrl: "https://api.z.ai/api/paas/v4",
  models: ["glm-4.6", "glm-4.5-air"],
  keyHint: "z.ai → API keys",
  claudeLogin: false,
  ...over,
});

/** Presets as the gateway lists them: a key one, a local one (no key) and the Claude login. */
export const presets = (): ProviderPresetView[] => [
  preset(),
  preset({
    id: "ollama",
    label: "Ollama (local)",
    provider: "ollama",
    authKind: "none",
    baseUrl: "http://127.0.0.1:11434/v1",
    models: ["qwen3-coder:30b", "gpt-oss:20b"],
    keyHint: "",
  }),
  preset({
    id: "claude-account",
    label: "Claude subscription (Pro/Max) account",
    provider: "anthropic",
    apiFormat: "anthropic",
    authKind: "oauth",
    baseUrl: "https://api.anthropic.com",
    models: ["claude-sonnet-4-6"],
    keyHint: "log in with Claude Code on this machine, then import its login",
    claudeLogin: true,
  }),
];

export const health = (over: Partial<HealthView> = {}): HealthView => ({
  status: "ok",
  version: "0.1.0",
  listen: "127.0.0.1:7821",
  uptimeMs: 1000,
  providers: [],
  breakers: [],
  connectionsOutOfRotation: 0,
  activeLockouts: 0,
  connections: [],
  claudeAccounts: [],
  database: "ok",
  databaseBackend: "sqlite",
  replica: null,
  ...over,
});

export const desktopPrefs = (over: Partial<DesktopPrefs> = {}): DesktopPrefs => ({
  port: 7821,
  launchAtLogin: false,
  startHidden: false,
  theme: "system",
  ...over,
});

/** The gateway's default settings document (exported from Rust into the bindings). */
export function resilienceDefaults(): ResilienceSettings {
  return structuredClone(DEFAULT_RESILIENCE_SETTINGS) as unknown as ResilienceSettings;
}

/** The stored settings document as `resilience_get` answers it: the defaults, `over`, a version. */
export function resilienceSettings(
  over: Partial<ResilienceSettings> = {},
  version = 1,
): Versioned<ResilienceSettings> {
  return { ...resilienceDefaults(), ...over, version };
}

/** The model-lockout group as `model_lockout_get` answers it (the settings document's version). */
export function modelLockoutSettings(
  over: Partial<ModelLockoutSettings> = {},
  version = 1,
): Versioned<ModelLockoutSettings> {
  return { ...resilienceDefaults().modelLockout, ...over, version };
}

/** The ranges table as `resilience_ranges` exports it (the Rust table, via the bindings). */
export function ranges(): SettingsRanges {
  return structuredClone(SETTINGS_RANGES) as unknown as SettingsRanges;
}

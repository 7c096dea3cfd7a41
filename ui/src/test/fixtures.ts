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
  RateLimitsView,
  ResilienceSettings,
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

export const summary = (over: Partial<MonitoringSummaryView> = {}): MonitoringSummaryView => ({
  requestsLastHour: 0,
  errorsLastHour: 0,
  requestsLastDay: 0,
  errorsLastDay: 0,
  recentErrors: [],
  ...over,
});

export const health = (over: Partial<HealthView> = {}): HealthView => ({
  status: "ok",
  version: "0.1.0",
  listen: "127.0.0.1:7821",
  uptimeMs: 1000,
  providers: [],
  breakers: [],
  connectionsOutOfRotation: 0,
  activeLockouts: 0,
  claudeAccounts: [],
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

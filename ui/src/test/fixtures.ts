// Test documents shaped like the gateway's answers.
import type {
  ApiKeyView,
  ConnectionCooldownView,
  ConnectionView,
  DesktopPrefs,
  FieldRange,
  GatewayStatusView,
  HealthView,
  ModelLockoutView,
  MonitoringSummaryView,
  ProviderBreakerView,
  ProviderErrorRule,
  ResilienceSettings,
  SettingsRanges,
} from "../ipc/bindings";

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
  models: ["glm-5"],
  providerSpecific: {},
  createdAt: NOW - 86_400_000,
  updatedAt: NOW - 3_600_000,
  claudeWall: null,
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

export function resilienceDefaults(): ResilienceSettings {
  const profile = (degrade: number, open: number, reset: number) => ({
    failureThreshold: open,
    degradationThreshold: degrade,
    resetTimeoutMs: reset,
    cooldownByKind: {},
  });
  return {
    providerBreaker: { oauth: profile(5, 8, 60_000), apikey: profile(7, 12, 30_000) },
    providerCooldown: {
      enabled: false,
      oauth: { failureThreshold: 10, failureWindowMs: 900_000, cooldownMs: 300_000 },
      apikey: { failureThreshold: 15, failureWindowMs: 1_800_000, cooldownMs: 600_000 },
      minRetryCooldownMs: 5_000,
      maxRetryCooldownMs: 300_000,
    },
    connectionCooldown: {
      oauth: { baseCooldownMs: 5_000, maxBackoffSteps: 8 },
      apikey: { baseCooldownMs: 3_000, maxBackoffSteps: 5 },
    },
    streamStallCooldown: { enabled: false },
    modelLockout: {
      enabled: false,
      errorCodes: [403, 404, 429, 502, 503, 504],
      baseCooldownMs: 120_000,
      maxCooldownMs: 1_800_000,
      maxBackoffSteps: 10,
      useExponentialBackoff: true,
    },
    requestQueue: { maxWaitMs: 30_000, executionMaxWaitMs: 600_000, maxQueueDepth: 0, autoEnableApiKeyProviders: true },
    quotaShareConcurrencyLimit: { enabled: true },
    comboCooldownWait: { enabled: true, maxWaitMs: 90_000, maxAttempts: 5, budgetMs: 300_000 },
    streamRecovery: {
      stallBudgetMs: 120_000,
      throughputWatchdog: {
        enabled: false,
        warmupMs: 30_000,
        windowMs: 30_000,
        minUsefulBytesPerSecond: 4,
        minUsefulBytes: 1,
      },
    },
    sessionAffinityTtlMs: 0,
    providerErrorRules: [],
  };
}

const DAY = 86_400_000;
const int = (path: string, min: number, max: number): FieldRange => ({
  path,
  kind: "integer",
  min,
  max,
  unit: null,
  allowed: [],
});
const ms = (path: string, min: number, max: number): FieldRange => ({ ...int(path, min, max), unit: "ms" });

const RULE_SCOPES = ["model", "provider", "connection"] as const;
const ERROR_REASONS = [
  "rate_limit",
  "quota_exhausted",
  "concurrency_limited",
  "auth_error",
  "request_rejected",
  "forbidden",
  "credits_exhausted",
  "banned",
  "not_found",
  "server_error",
  "timeout",
  "unreachable",
  "model_capacity",
  "stream_stall",
  "bad_request",
  "local",
  "unknown",
] as const;

/** The ranges table as `resilience_ranges` exports it (same rows as the Rust table). */
export function ranges(): SettingsRanges {
  const fields: FieldRange[] = [];
  for (const p of ["oauth", "apikey"]) {
    fields.push(
      int(`/providerBreaker/${p}/failureThreshold`, 1, 1000),
      int(`/providerBreaker/${p}/degradationThreshold`, 1, 1000),
      ms(`/providerBreaker/${p}/resetTimeoutMs`, 1000, DAY),
    );
    for (const k of ["serverError", "timeout", "unreachable", "rateLimit", "quotaExhausted"]) {
      fields.push(ms(`/providerBreaker/${p}/cooldownByKind/${k}`, 1000, DAY));
    }
  }
  for (const p of ["oauth", "apikey"]) {
    fields.push(
      int(`/providerCooldown/${p}/failureThreshold`, 1, 1000),
      ms(`/providerCooldown/${p}/failureWindowMs`, 1000, DAY),
      ms(`/providerCooldown/${p}/cooldownMs`, 1000, DAY),
    );
  }
  fields.push(
    ms("/providerCooldown/minRetryCooldownMs", 0, 3_600_000),
    ms("/providerCooldown/maxRetryCooldownMs", 0, DAY),
    ms("/connectionCooldown/oauth/baseCooldownMs", 0, 600_000),
    int("/connectionCooldown/oauth/maxBackoffSteps", 0, 16),
    ms("/connectionCooldown/apikey/baseCooldownMs", 0, 600_000),
    int("/connectionCooldown/apikey/maxBackoffSteps", 0, 16),
    { path: "/modelLockout/errorCodes", kind: "list", min: 1, max: 32, unit: null, allowed: [] },
    int("/modelLockout/errorCodes/*", 100, 599),
    ms("/modelLockout/baseCooldownMs", 5000, 600_000),
    ms("/modelLockout/maxCooldownMs", 5000, 3_600_000),
    int("/modelLockout/maxBackoffSteps", 0, 20),
    ms("/requestQueue/maxWaitMs", 1, DAY),
    ms("/requestQueue/executionMaxWaitMs", 1, DAY),
    int("/requestQueue/maxQueueDepth", 0, 100_000),
    ms("/comboCooldownWait/maxWaitMs", 0, 300_000),
    int("/comboCooldownWait/maxAttempts", 0, 10),
    ms("/comboCooldownWait/budgetMs", 0, 300_000),
    ms("/streamRecovery/stallBudgetMs", 1000, 3_600_000),
    ms("/streamRecovery/throughputWatchdog/warmupMs", 0, 600_000),
    ms("/streamRecovery/throughputWatchdog/windowMs", 1000, 600_000),
    int("/streamRecovery/throughputWatchdog/minUsefulBytesPerSecond", 1, 1_000_000),
    int("/streamRecovery/throughputWatchdog/minUsefulBytes", 1, 1_000_000),
    ms("/sessionAffinityTtlMs", 0, 7 * DAY),
    { path: "/providerErrorRules", kind: "list", min: 0, max: 50, unit: null, allowed: [] },
    { path: "/providerErrorRules/*/provider", kind: "text", min: 1, max: 64, unit: null, allowed: [] },
    int("/providerErrorRules/*/status", 100, 599),
    { path: "/providerErrorRules/*/match", kind: "text", min: 1, max: 200, unit: null, allowed: [] },
    { path: "/providerErrorRules/*/scope", kind: "choice", min: null, max: null, unit: null, allowed: [...RULE_SCOPES] },
    { path: "/providerErrorRules/*/reason", kind: "choice", min: null, max: null, unit: null, allowed: [...ERROR_REASONS] },
    ms("/providerErrorRules/*/cooldownMs", 0, DAY),
  );
  return { fields };
}

// The Resilience page's cards: one per group of ResilienceSettings, fields addressed
// by their JSON pointer (which is also the ranges-table path and the issue path).
import type { CapMapNoun } from "../../shared/capMap";
import type { FieldSection, SettingField } from "../../shared/settingsForm";

export type GroupDef = { key: string; title: string; description: string; sections: FieldSection[] };

const int = (path: string, label: string, help?: string): SettingField => ({ kind: "int", path, label, help });
const optInt = (path: string, label: string, help?: string): SettingField => ({
  kind: "int",
  path,
  label,
  help,
  optional: true,
});
const bool = (path: string, label: string, help?: string): SettingField => ({ kind: "bool", path, label, help });

/** How the provider caps' messages name an entry. */
const PROVIDER_CAPS: CapMapNoun = { noun: "provider", example: "glm=2" };

function breakerProfile(profile: "oauth" | "apikey", who: string): FieldSection[] {
  const p = `/providerBreaker/${profile}`;
  return [
    {
      title: `${who} profile`,
      fields: [
        int(`${p}/degradationThreshold`, "Degradation threshold", "DEGRADED at this many failures (below the failure threshold)."),
        int(`${p}/failureThreshold`, "Failure threshold", "OPEN (provider skipped) at this many failures."),
        int(`${p}/resetTimeoutMs`, "Reset timeout (ms)", "How long the breaker stays open before one probe."),
      ],
    },
    {
      title: `${who} profile: open hold by failure kind`,
      description: "Replaces the reset timeout for that kind of failure; empty uses the reset timeout.",
      fields: [
        optInt(`${p}/cooldownByKind/serverError`, "Server error (ms)"),
        optInt(`${p}/cooldownByKind/timeout`, "Timeout (ms)"),
        optInt(`${p}/cooldownByKind/unreachable`, "Unreachable (ms)"),
        optInt(`${p}/cooldownByKind/rateLimit`, "Rate limit (ms)"),
        optInt(`${p}/cooldownByKind/quotaExhausted`, "Quota exhausted (ms)"),
      ],
    },
  ];
}

function gate(profile: "oauth" | "apikey", who: string): FieldSection {
  const p = `/providerCooldown/${profile}`;
  return {
    title: `${who} providers`,
    fields: [
      int(`${p}/failureThreshold`, "Failure threshold", "Failures within the window that cool the provider."),
      int(`${p}/failureWindowMs`, "Failure window (ms)"),
      int(`${p}/cooldownMs`, "Cooldown (ms)", "How long the provider then cools."),
    ],
  };
}

export const GROUPS: GroupDef[] = [
  {
    key: "providerBreaker",
    title: "Provider circuit breaker",
    description:
      "Counts provider-level failures (408, 500, 502, 503, 504) per provider. DEGRADED warns; OPEN skips the provider until a probe succeeds.",
    sections: [...breakerProfile("oauth", "OAuth"), ...breakerProfile("apikey", "API-key")],
  },
  {
    key: "providerCooldown",
    title: "Provider cooldown gate",
    description: "An optional windowed gate: too many failures within the window cool the whole provider. Off by default.",
    sections: [
      {
        fields: [
          bool("/providerCooldown/enabled", "Enabled"),
          int("/providerCooldown/minRetryCooldownMs", "Min retry cooldown (ms)", "First cooldown of a connection entry; doubles per failure."),
          int("/providerCooldown/maxRetryCooldownMs", "Max retry cooldown (ms)", "Cap of a connection entry's cooldown."),
        ],
      },
      gate("oauth", "OAuth"),
      gate("apikey", "API-key"),
    ],
  },
  {
    key: "connectionCooldown",
    title: "Connection cooldown",
    description: "A failing account or key cools for base × 2^level; the level is capped by the max backoff steps.",
    sections: [
      {
        title: "OAuth connections",
        fields: [
          int("/connectionCooldown/oauth/baseCooldownMs", "Base cooldown (ms)"),
          int("/connectionCooldown/oauth/maxBackoffSteps", "Max backoff steps"),
        ],
      },
      {
        title: "API-key connections",
        fields: [
          int("/connectionCooldown/apikey/baseCooldownMs", "Base cooldown (ms)"),
          int("/connectionCooldown/apikey/maxBackoffSteps", "Max backoff steps"),
        ],
      },
    ],
  },
  {
    key: "streamStallCooldown",
    title: "Stream stall cooldown",
    description: "Whether a stalled stream also cools its connection (the error is recorded either way).",
    sections: [{ fields: [bool("/streamStallCooldown/enabled", "Enabled")] }],
  },
  {
    key: "requestQueue",
    title: "Request queue",
    description:
      "Where a request waits when every connection that could serve it is at its concurrency cap (Connections → Max concurrent requests, Per-model caps). A connection may override both budgets. A request takes the connection's and model's slots first, then the provider's and the gateway's, and the strictest cap holds it.",
    sections: [
      {
        fields: [
          int(
            "/requestQueue/maxWaitMs",
            "Max wait (ms)",
            "Queue-wait budget: a request that waits longer for a slot fails (RATE_LIMIT_QUEUE_TIMEOUT, or SEMAPHORE_TIMEOUT for a per-model cap) and never reaches the upstream.",
          ),
          int(
            "/requestQueue/executionMaxWaitMs",
            "Execution max wait (ms)",
            "Bound on the wait for an answer after dispatch: over it the request fails with a 504 (RATE_LIMIT_EXECUTION_TIMEOUT). A stream that has started is bounded by stream recovery instead.",
          ),
          int(
            "/requestQueue/maxQueueDepth",
            "Max queue depth",
            "When the queues of every candidate connection already hold this many requests, a new one is refused at once (RATE_LIMIT_QUEUE_FULL). 0 turns the depth cap off.",
          ),
          int(
            "/requestQueue/globalConcurrentRequests",
            "Gateway-wide concurrency cap",
            "Upstream requests in flight at most across the whole gateway; 0 = no cap. Each attempt holds a slot until its answer ends (the last byte of a stream). Over the cap it waits in line within Max wait (SEMAPHORE_TIMEOUT after it), or is refused at once (SEMAPHORE_QUEUE_FULL) while quota-share serialization is off.",
          ),
          bool("/requestQueue/autoEnableApiKeyProviders", "Auto-enable API-key providers", "Queue every active API-key connection."),
        ],
      },
    ],
  },
  {
    key: "providerConcurrency",
    title: "Provider concurrency caps",
    description:
      "Upstream requests in flight at most per provider, across all of its connections: for keys that share one account's limit, say. Over a provider's cap a request waits as at a connection's cap. A provider not listed has no provider cap; saving replaces the whole list.",
    sections: [
      {
        fields: [
          {
            kind: "capMap",
            path: "/providerConcurrency",
            label: "Provider caps",
            help: "One provider=cap per line, e.g. glm=2. The provider is the id shown in the connections list.",
            entries: PROVIDER_CAPS,
          },
        ],
      },
    ],
  },
  {
    key: "quotaShareConcurrencyLimit",
    title: "Quota-share concurrency limit",
    description:
      "What happens to a request over a connection's cap. On: it waits in that connection's queue, first come first served across every client key sharing the account, within the queue-wait budget. Off: it is refused at once with a 429 (SEMAPHORE_QUEUE_FULL).",
    sections: [
      {
        fields: [
          bool(
            "/quotaShareConcurrencyLimit/enabled",
            "Enabled",
            "Queue requests over a connection's cap instead of refusing them.",
          ),
        ],
      },
    ],
  },
  {
    key: "comboCooldownWait",
    title: "Combo cooldown wait",
    description: "Wait out a short transient cooldown and re-dispatch instead of failing with a 429.",
    sections: [
      {
        fields: [
          bool("/comboCooldownWait/enabled", "Enabled"),
          int("/comboCooldownWait/maxWaitMs", "Max wait (ms)", "Longest single wait."),
          int("/comboCooldownWait/maxAttempts", "Max attempts", "Re-dispatch cycles."),
          int("/comboCooldownWait/budgetMs", "Budget (ms)", "Total wait per request (at least the max wait)."),
        ],
      },
    ],
  },
  {
    key: "streamRecovery",
    title: "Stream recovery",
    description: "Time budgets of one upstream attempt, and the throughput watchdog for streaming responses.",
    sections: [
      {
        fields: [
          int(
            "/streamRecovery/readinessBudgetMs",
            "Readiness budget (ms)",
            "From dispatching an attempt to its first model event; when it runs out before anything reached the client, the gateway fails over.",
          ),
          int("/streamRecovery/stallBudgetMs", "Stall budget (ms)", "No model output (reasoning counts) for this long aborts the attempt."),
          int(
            "/streamRecovery/attemptDeadlineMs",
            "Attempt deadline (ms)",
            "Hard upper bound on one upstream attempt, streams included; for a non-streamed request also the wait for the answer.",
          ),
        ],
      },
      {
        title: "Throughput watchdog",
        fields: [
          bool("/streamRecovery/throughputWatchdog/enabled", "Enabled"),
          int("/streamRecovery/throughputWatchdog/warmupMs", "Warmup (ms)"),
          int("/streamRecovery/throughputWatchdog/windowMs", "Window (ms)"),
          int("/streamRecovery/throughputWatchdog/minUsefulBytesPerSecond", "Min useful bytes per second"),
          int("/streamRecovery/throughputWatchdog/minUsefulBytes", "Min useful bytes"),
        ],
      },
    ],
  },
  {
    key: "sessionAffinityTtlMs",
    title: "Session affinity",
    description: "How long a client session stays pinned to one connection; 0 disables pinning.",
    sections: [{ fields: [int("/sessionAffinityTtlMs", "Session affinity TTL (ms)")] }],
  },
];

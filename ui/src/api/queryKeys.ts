// TanStack Query keys shared by the features, and which keys each change event
// invalidates (push, don't poll).
import type { QueryKey } from "@tanstack/react-query";
import type { EventName } from "./types";

export const queryKeys = {
  connections: ["connections"] as const,
  combos: ["combos"] as const,
  rateLimits: ["rateLimits"] as const,
  sessions: ["sessions"] as const,
  leases: ["leases"] as const,
  keys: ["keys"] as const,
  /** The request log's lists (one per filter) and details. */
  requests: ["requests"] as const,
  request: (requestId: string) => ["requests", "detail", requestId] as const,
  presets: ["presets"] as const,
  health: ["health"] as const,
  summary: ["summary"] as const,
  breakers: ["breakers"] as const,
  resilience: ["resilience", "settings"] as const,
  resilienceDefaults: ["resilience", "defaults"] as const,
  ranges: ["resilience", "ranges"] as const,
  cooldownsAll: ["cooldowns"] as const,
  cooldowns: (provider: string | null) => ["cooldowns", provider ?? "*"] as const,
  lockouts: ["lockouts"] as const,
  modelLockout: ["modelLockout"] as const,
  gateway: ["gateway"] as const,
  /** Whether Claude Code and Codex are set up to use this gateway. */
  setup: ["setup"] as const,
  desktopStatus: ["desktop", "status"] as const,
  desktopPrefs: ["desktop", "prefs"] as const,
};

/**
 * Every connection's derived status (`ConnectionView.status`, the health document's
 * `connections`) is computed from breakers, cooldowns, lockouts, the usage wall, the
 * last Test and the routing pause: any event about one of them makes both stale.
 */
const STATUS: readonly QueryKey[] = [queryKeys.connections, queryKeys.health];

/** The query keys (prefixes) each event makes stale. */
export const EVENT_INVALIDATIONS: Record<EventName, readonly QueryKey[]> = {
  // Failures come with these: the request log and its counts follow them (and are polled).
  breakersChanged: [queryKeys.breakers, ...STATUS, queryKeys.requests, queryKeys.summary],
  cooldownsChanged: [queryKeys.cooldownsAll, ...STATUS, queryKeys.requests, queryKeys.summary],
  lockoutsChanged: [queryKeys.lockouts, queryKeys.cooldownsAll, ...STATUS],
  lanesChanged: STATUS,
  // Every routing rebuild (connections, combos, aliases) is announced as this one.
  // Forgetting session pins is announced as this one too, and so is deleting a
  // connection or a client key, which ends its leases (leasesChanged comes as well).
  // A Test that ran and a visible change of an account's usage windows come as this.
  connectionsChanged: [
    ...STATUS,
    queryKeys.cooldownsAll,
    queryKeys.combos,
    queryKeys.rateLimits,
    queryKeys.sessions,
    queryKeys.leases,
    queryKeys.requests,
    queryKeys.summary,
  ],
  // The session-affinity TTL is a setting: turning it on or off changes the pin list.
  settingsChanged: [queryKeys.resilience, queryKeys.modelLockout, queryKeys.rateLimits, queryKeys.sessions],
  // Pausing routing is a status of every connection.
  routingChanged: [queryKeys.gateway, queryKeys.desktopStatus, ...STATUS],
  // Acquired, renewed, moved or ended (a lease that lapses unrenewed sends nothing).
  leasesChanged: [queryKeys.leases],
};

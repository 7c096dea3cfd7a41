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
  desktopStatus: ["desktop", "status"] as const,
  desktopPrefs: ["desktop", "prefs"] as const,
};

/** The query keys (prefixes) each event makes stale. */
export const EVENT_INVALIDATIONS: Record<EventName, readonly QueryKey[]> = {
  breakersChanged: [queryKeys.breakers, queryKeys.health],
  cooldownsChanged: [queryKeys.cooldownsAll, queryKeys.connections],
  lockoutsChanged: [queryKeys.lockouts, queryKeys.cooldownsAll],
  lanesChanged: [queryKeys.connections, queryKeys.health],
  // Every routing rebuild (connections, combos, aliases) is announced as this one.
  // Forgetting session pins is announced as this one too, and so is deleting a
  // connection or a client key, which ends its leases (leasesChanged comes as well).
  connectionsChanged: [
    queryKeys.connections,
    queryKeys.cooldownsAll,
    queryKeys.combos,
    queryKeys.rateLimits,
    queryKeys.sessions,
    queryKeys.leases,
  ],
  // The session-affinity TTL is a setting: turning it on or off changes the pin list.
  settingsChanged: [queryKeys.resilience, queryKeys.modelLockout, queryKeys.rateLimits, queryKeys.sessions],
  routingChanged: [queryKeys.gateway, queryKeys.desktopStatus],
  // Acquired, renewed, moved or ended (a lease that lapses unrenewed sends nothing).
  leasesChanged: [queryKeys.leases],
};

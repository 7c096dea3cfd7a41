// Queries more than one feature reads (same keys, so one fetch serves every page).
import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import type { HealthView } from "../ipc/bindings";
import { rangeLookup, type RangeLookup } from "../shared/ranges";
import { useApi } from "./ApiProvider";
import { queryKeys } from "./queryKeys";

/** How long after a status's announced end it is refetched. */
const STATUS_END_MARGIN_MS = 1_000;

/**
 * Milliseconds until the first of `instants` still ahead (each plus a margin) has
 * passed: a status that ends by itself (a cooldown, an open breaker) sends no event
 * when it does, so its list is refetched then. An instant already past (with its
 * margin) is not waited for again; false when none is ahead.
 */
export function untilStatusEnds(instants: (number | null)[], now: number): number | false {
  const ahead = instants.filter((t): t is number => t !== null && t + STATUS_END_MARGIN_MS > now);
  if (ahead.length === 0) return false;
  return Math.min(...ahead) + STATUS_END_MARGIN_MS - now;
}

/** Every connection, each with its derived status (refetched when one ends by itself). */
export function useConnectionsQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.connections,
    queryFn: () => api.connectionsList(),
    refetchInterval: (query) => untilStatusEnds((query.state.data ?? []).map((c) => c.status.until), Date.now()),
  });
}

/** How often a team-mode replica's health is refetched while its database answers. */
const TEAM_DATABASE_POLL_MS = 15_000;
/** How often it is refetched while the database is unavailable (to see it return). */
const DATABASE_RETURN_POLL_MS = 5_000;

/**
 * In team mode the shared database can be lost and come back without any change
 * event (and the resynchronisation's events may arrive just before the replica
 * reports it back), so the health document is refetched on a timer there; with
 * SQLite the database is a local file and events suffice (false).
 */
export function databasePoll(health: HealthView | undefined): number | false {
  if (health?.databaseBackend !== "postgres") return false;
  return health.database === "unavailable" ? DATABASE_RETURN_POLL_MS : TEAM_DATABASE_POLL_MS;
}

/** The shorter of two refetch delays (false: none). */
function sooner(a: number | false, b: number | false): number | false {
  if (a === false) return b;
  if (b === false) return a;
  return Math.min(a, b);
}

/** The health document: every connection's derived status, breakers, lockouts, the database. */
export function useHealthQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.health,
    queryFn: () => api.monitoringHealth(),
    refetchInterval: (query) =>
      sooner(
        untilStatusEnds((query.state.data?.connections ?? []).map((c) => c.status.until), Date.now()),
        databasePoll(query.state.data),
      ),
  });
}

/** The client keys (names for the request log and the Overview). */
export function useKeysQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.keys, queryFn: () => api.keysList() });
}

/**
 * How often live flow state (in flight, queued) is refetched while a page shows it.
 * Gates change with every request, so no change event announces them; TanStack
 * Query pauses the interval while the window is hidden.
 */
export const LIVE_FLOW_POLL_MS = 2_000;

/** Every connection's flow control, live (polled while a page shows it). */
export function useRateLimitsQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.rateLimits,
    queryFn: () => api.rateLimitsGet(),
    refetchInterval: LIVE_FLOW_POLL_MS,
    staleTime: 0,
  });
}

/** Every combo, each with its version. */
export function useCombosQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.combos, queryFn: () => api.combosList() });
}

/** Every connection's cooldown state (the unfiltered list). */
export function useCooldownsQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.cooldowns(null), queryFn: () => api.cooldownsList(null) });
}

export function useResilienceQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.resilience, queryFn: () => api.resilienceGet() });
}

export function useResilienceDefaultsQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.resilienceDefaults,
    queryFn: () => api.resilienceDefaults(),
    staleTime: Infinity,
  });
}

/** The validator's ranges table as a lookup (empty while loading or unavailable). */
export function useRanges(): RangeLookup {
  const api = useApi();
  const q = useQuery({ queryKey: queryKeys.ranges, queryFn: () => api.resilienceRanges(), staleTime: Infinity });
  return useMemo(() => rangeLookup(q.data?.fields), [q.data]);
}

export function useGatewayQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.gateway, queryFn: () => api.gatewayStatus() });
}

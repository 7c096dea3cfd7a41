// Queries more than one feature reads (same keys, so one fetch serves every page).
import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { rangeLookup, type RangeLookup } from "../shared/ranges";
import { useApi } from "./ApiProvider";
import { queryKeys } from "./queryKeys";

export function useConnectionsQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.connections, queryFn: () => api.connectionsList() });
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

// Leases queries and mutations. Every acquire, renew, move and release arrives as
// `leasesChanged`; a lease that lapses unrenewed sends no event, so the list is also
// refetched when its first lease is due to lapse.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { LeaseView } from "../../ipc/bindings";

export { useConnectionsQuery } from "../../api/sharedQueries";

/** How long after a lease's expiry the list is refetched (and the shortest wait). */
const LAPSE_MARGIN_MS = 1_000;

/** Milliseconds until the first of `leases` has lapsed (with a margin); false for none. */
export function untilFirstLapse(leases: LeaseView[], now: number): number | false {
  if (leases.length === 0) return false;
  const first = Math.min(...leases.map((l) => l.expiresAt));
  return Math.max(LAPSE_MARGIN_MS, first - now + LAPSE_MARGIN_MS);
}

export function useLeasesQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.leases,
    queryFn: () => api.leasesList(),
    refetchInterval: (query) => untilFirstLapse(query.state.data?.leases ?? [], Date.now()),
  });
}

export function useReleaseLease() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: number) => api.leasesRelease(id),
    // A lease that had already ended (404) is gone from the list too.
    onSettled: () => void qc.invalidateQueries({ queryKey: queryKeys.leases }),
  });
}

// Resilience queries and mutations: settings, defaults, ranges, live breakers.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { BreakerResetRequest } from "../../ipc/bindings";

export {
  useRanges,
  useResilienceDefaultsQuery,
  useResilienceQuery,
} from "../../api/sharedQueries";
export { usePatchResilience, useReloadResilience } from "../../api/settingsMutations";

export function useBreakersQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.breakers, queryFn: () => api.breakersList() });
}

export function useResetBreakers() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (request: BreakerResetRequest) => api.breakersReset(request),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: queryKeys.breakers });
      void qc.invalidateQueries({ queryKey: queryKeys.health });
    },
  });
}

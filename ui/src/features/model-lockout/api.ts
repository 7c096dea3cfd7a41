// Model lockout queries and mutations.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { LockoutClearRequest } from "../../ipc/bindings";

export { useRanges, useResilienceDefaultsQuery } from "../../api/sharedQueries";
export { usePatchModelLockout, useReloadModelLockout } from "../../api/settingsMutations";

export function useModelLockoutQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.modelLockout, queryFn: () => api.modelLockoutGet() });
}

export function useLockoutsQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.lockouts, queryFn: () => api.lockoutsList() });
}

export function useClearLockout() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (request: LockoutClearRequest) => api.lockoutsClear(request),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: queryKeys.lockouts });
      void qc.invalidateQueries({ queryKey: queryKeys.cooldownsAll });
      void qc.invalidateQueries({ queryKey: queryKeys.health });
    },
  });
}

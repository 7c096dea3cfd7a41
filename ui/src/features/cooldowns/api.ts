// Cooldown Manager queries and mutations.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { CooldownsClearRequest } from "../../ipc/bindings";

export {
  useConnectionsQuery,
  useCooldownsQuery,
  useRanges,
  useResilienceDefaultsQuery,
  useResilienceQuery,
} from "../../api/sharedQueries";
export { usePatchResilience, useReloadResilience } from "../../api/settingsMutations";

export function useClearCooldowns() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (request: CooldownsClearRequest) => api.cooldownsClear(request),
    onSuccess: () => {
      for (const queryKey of [queryKeys.cooldownsAll, queryKeys.connections, queryKeys.lockouts, queryKeys.health]) {
        void qc.invalidateQueries({ queryKey });
      }
    },
  });
}

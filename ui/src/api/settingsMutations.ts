// Settings writes shared by the Resilience, Model Lockout and Cooldown Manager pages.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { ModelLockoutPatch, ResilienceSettingsPatch } from "../ipc/bindings";
import { useApi } from "./ApiProvider";
import { queryKeys } from "./queryKeys";

/**
 * A patch from the whole groups a settings form built (`{ group: value }`); absent
 * groups keep their values. The groups come from the current document with the
 * form's fields applied, so they have the patch's shape.
 */
export function toResiliencePatch(groups: Record<string, unknown>): ResilienceSettingsPatch {
  return groups as ResilienceSettingsPatch;
}

export function usePatchResilience() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (groups: Record<string, unknown>) => api.resiliencePatch(toResiliencePatch(groups)),
    onSuccess: (settings) => {
      qc.setQueryData(queryKeys.resilience, settings);
      qc.setQueryData(queryKeys.modelLockout, settings.modelLockout);
    },
  });
}

export function usePatchModelLockout() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (patch: ModelLockoutPatch) => api.modelLockoutPatch(patch),
    onSuccess: (settings) => {
      qc.setQueryData(queryKeys.modelLockout, settings);
      void qc.invalidateQueries({ queryKey: queryKeys.resilience });
    },
  });
}

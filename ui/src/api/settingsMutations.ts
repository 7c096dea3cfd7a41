// Settings writes shared by the Resilience, Model Lockout and Cooldown Manager pages.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { ModelLockoutPatch, ResilienceSettingsPatch } from "../ipc/bindings";
import { useApi } from "./ApiProvider";
import { queryKeys } from "./queryKeys";

/** Every group absent ("keep"); a form's patch fills in the groups it edits. */
const EMPTY_RESILIENCE_PATCH: ResilienceSettingsPatch = {
  providerBreaker: null,
  providerCooldown: null,
  connectionCooldown: null,
  streamStallCooldown: null,
  modelLockout: null,
  requestQueue: null,
  quotaShareConcurrencyLimit: null,
  comboCooldownWait: null,
  streamRecovery: null,
  sessionAffinityTtlMs: null,
  providerErrorRules: null,
};

/** A patch from whole groups built by a settings form (`{ group: value }`). */
export function toResiliencePatch(groups: Record<string, unknown>): ResilienceSettingsPatch {
  return { ...EMPTY_RESILIENCE_PATCH, ...groups } as ResilienceSettingsPatch;
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

// Settings writes shared by the Resilience, Model Lockout and Cooldown Manager pages.
// The three edit one versioned document: every save names the version it was made to,
// and the cache then holds the returned document with its new version, so the next
// save names that one.
import { useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import type {
  ModelLockoutPatch,
  ModelLockoutSettings,
  ResilienceSettings,
  ResilienceSettingsPatch,
} from "../ipc/bindings";
import { useApi } from "./ApiProvider";
import { queryKeys } from "./queryKeys";
import { withoutVersion, type Versioned } from "./versions";

/**
 * A patch from the whole groups a settings form built (`{ group: value }`); absent
 * groups keep their values. The groups come from the current document with the
 * form's fields applied, so they have the patch's shape.
 */
export function toResiliencePatch(groups: Record<string, unknown>): ResilienceSettingsPatch {
  return groups as ResilienceSettingsPatch;
}

/** Puts a whole settings document in the cache, and its model-lockout group. */
export function storeSettings(qc: QueryClient, settings: Versioned<ResilienceSettings>): void {
  qc.setQueryData(queryKeys.resilience, settings);
  qc.setQueryData<Versioned<ModelLockoutSettings>>(queryKeys.modelLockout, {
    ...settings.modelLockout,
    version: settings.version,
  });
}

export function usePatchResilience() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ groups, expectedVersion }: { groups: Record<string, unknown>; expectedVersion: number }) =>
      api.resiliencePatch(toResiliencePatch(groups), expectedVersion),
    onSuccess: (settings) => storeSettings(qc, settings),
  });
}

export function usePatchModelLockout() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ patch, expectedVersion }: { patch: ModelLockoutPatch; expectedVersion: number }) =>
      api.modelLockoutPatch(patch, expectedVersion),
    onSuccess: (lockout, { expectedVersion }) => {
      qc.setQueryData(queryKeys.modelLockout, lockout);
      // The cached settings document is this write's base only when it was at the
      // version the write named; then it is that document with the new group.
      qc.setQueryData<Versioned<ResilienceSettings>>(queryKeys.resilience, (doc) =>
        doc && doc.version === expectedVersion
          ? { ...doc, modelLockout: withoutVersion(lockout), version: lockout.version }
          : doc,
      );
      void qc.invalidateQueries({ queryKey: queryKeys.resilience });
    },
  });
}

/** Refetches the settings document (after a save refused as stale) and resolves with it. */
export function useReloadResilience(): () => Promise<Versioned<ResilienceSettings>> {
  const api = useApi();
  const qc = useQueryClient();
  return async () => {
    const settings = await qc.fetchQuery({
      queryKey: queryKeys.resilience,
      queryFn: () => api.resilienceGet(),
      staleTime: 0,
    });
    storeSettings(qc, settings);
    return settings;
  };
}

/** Refetches the model-lockout settings and resolves with them. */
export function useReloadModelLockout(): () => Promise<Versioned<ModelLockoutSettings>> {
  const api = useApi();
  const qc = useQueryClient();
  return async () => {
    const lockout = await qc.fetchQuery({
      queryKey: queryKeys.modelLockout,
      queryFn: () => api.modelLockoutGet(),
      staleTime: 0,
    });
    void qc.invalidateQueries({ queryKey: queryKeys.resilience });
    return lockout;
  };
}

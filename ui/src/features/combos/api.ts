// Combos queries and mutations. A save names the version of the combo it was made to
// (0 for a new one); a combo changed, created or deleted elsewhere since refuses it
// (412). A delete refused because another combo targets this one is a 409.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { ComboView, Versioned } from "../../ipc/bindings";

export {
  useCombosQuery,
  useConnectionsQuery,
  useCooldownsQuery,
  useRateLimitsQuery,
} from "../../api/sharedQueries";

export function usePutCombo() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ combo, expectedVersion }: { combo: ComboView; expectedVersion: number }) =>
      api.combosPut(combo, expectedVersion),
    onSuccess: (saved) => {
      qc.setQueryData<Versioned<ComboView>[]>(queryKeys.combos, (list) =>
        list === undefined
          ? list
          : list.some((c) => c.name === saved.name)
            ? list.map((c) => (c.name === saved.name ? saved : c))
            : [...list, saved],
      );
      void qc.invalidateQueries({ queryKey: queryKeys.combos });
    },
  });
}

export function useDeleteCombo() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ name, expectedVersion }: { name: string; expectedVersion: number }) =>
      api.combosDelete(name, expectedVersion),
    onSuccess: () => void qc.invalidateQueries({ queryKey: queryKeys.combos }),
  });
}

/** Refetches the combos (after a write refused as stale), caches and resolves with them. */
export function useReloadCombos(): () => Promise<Versioned<ComboView>[]> {
  const api = useApi();
  const qc = useQueryClient();
  return () => qc.fetchQuery({ queryKey: queryKeys.combos, queryFn: () => api.combosList(), staleTime: 0 });
}

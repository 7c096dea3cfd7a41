// Preferences queries and mutations: the desktop app's own settings and the hosted
// gateway's state. Desktop IPC commands only: they answer when the gateway is down.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { DesktopPrefs } from "../../ipc/bindings";

/** Whether the hosted gateway runs, the port in force and where it came from; desktop only. */
export function useDesktopStatusQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.desktopStatus,
    queryFn: () => api.desktopStatus!(),
    enabled: api.desktopStatus !== undefined,
    refetchInterval: 10_000,
  });
}

/** Desktop preferences; disabled (never fetched) outside the desktop app. */
export function useDesktopPrefsQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.desktopPrefs,
    queryFn: () => api.desktopPrefsGet!(),
    enabled: api.desktopPrefsGet !== undefined,
  });
}

export function useSaveDesktopPrefs() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (prefs: DesktopPrefs) => api.desktopPrefsSet!(prefs),
    onSuccess: (prefs) => {
      qc.setQueryData(queryKeys.desktopPrefs, prefs);
      void qc.invalidateQueries({ queryKey: queryKeys.desktopStatus });
    },
  });
}

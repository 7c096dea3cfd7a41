// Connections queries and mutations. Updates and deletes name the version of the
// connection they were made to; a connection changed since refuses them (412).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import { LIVE_FLOW_POLL_MS } from "../../api/sharedQueries";
import type {
  ClaudeLoginImportRequest,
  ConnectionCreateRequest,
  ConnectionPatch,
  ConnectionView,
  SessionPinsClear,
} from "../../ipc/bindings";

export {
  useConnectionsQuery,
  useCooldownsQuery,
  useRanges,
  useRateLimitsQuery,
  useResilienceQuery,
} from "../../api/sharedQueries";

function useRefreshConnections() {
  const qc = useQueryClient();
  return () => {
    void qc.invalidateQueries({ queryKey: queryKeys.connections });
    void qc.invalidateQueries({ queryKey: queryKeys.cooldownsAll });
    void qc.invalidateQueries({ queryKey: queryKeys.health });
  };
}

export function useCreateConnection() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({
    mutationFn: (request: ConnectionCreateRequest) => api.connectionsCreate(request),
    onSuccess: refresh,
  });
}

/** Puts one connection (as the gateway returned it, with its version) in the list cache. */
function useStoreConnection() {
  const qc = useQueryClient();
  return (updated: ConnectionView) =>
    qc.setQueryData<ConnectionView[]>(queryKeys.connections, (list) =>
      list?.map((c) => (c.id === updated.id ? updated : c)),
    );
}

export function useUpdateConnection() {
  const api = useApi();
  const store = useStoreConnection();
  const refresh = useRefreshConnections();
  return useMutation({
    mutationFn: ({ id, patch, expectedVersion }: { id: string; patch: ConnectionPatch; expectedVersion: number }) =>
      api.connectionsUpdate(id, patch, expectedVersion),
    onSuccess: (updated) => {
      store(updated);
      refresh();
    },
  });
}

export function useDeleteConnection() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({
    mutationFn: ({ id, expectedVersion }: { id: string; expectedVersion: number }) =>
      api.connectionsDelete(id, expectedVersion),
    onSuccess: refresh,
  });
}

/** Refetches one connection (after a save refused as stale), caches and resolves with it. */
export function useReloadConnection(): (id: string) => Promise<ConnectionView> {
  const api = useApi();
  const store = useStoreConnection();
  const refresh = useRefreshConnections();
  return async (id) => {
    try {
      const fresh = await api.connectionsGet(id);
      store(fresh);
      return fresh;
    } catch (e) {
      // Gone, say: the list is out of date too.
      refresh();
      throw e;
    }
  };
}

export function useTestConnection() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({ mutationFn: (id: string) => api.connectionsTest(id), onSettled: refresh });
}

/**
 * Imports Claude Code's login on the gateway's machine as a Claude subscription
 * connection (created, refreshed or unchanged).
 */
export function useImportClaudeLogin() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({
    mutationFn: (request: ClaudeLoginImportRequest) => api.connectionsImportClaudeLogin(request),
    onSuccess: refresh,
  });
}

/** The provider presets of the add form (fetched only while it is shown); they never change. */
export function usePresetsQuery(enabled = true) {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.presets, queryFn: () => api.presetsList(), enabled, staleTime: Infinity });
}

/**
 * The session-affinity pins, live. Every client request slides its session's pin, and
 * new sessions are pinned without a change event, so this is polled like flow state.
 */
export function useSessionPinsQuery() {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.sessions,
    queryFn: () => api.sessionsList(),
    refetchInterval: LIVE_FLOW_POLL_MS,
    staleTime: 0,
  });
}

/** Forgets pins (one connection's, or all); the per-connection counts change with them. */
export function useForgetSessions() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (request: SessionPinsClear) => api.sessionsClear(request),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: queryKeys.sessions });
      void qc.invalidateQueries({ queryKey: queryKeys.rateLimits });
    },
  });
}

// Overview queries and mutations: gateway status and pause, request counts, client
// keys, one-click agent setup.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { ApiKeyCreateRequest } from "../../ipc/bindings";

export { useGatewayQuery, useHealthQuery, useKeysQuery } from "../../api/sharedQueries";

export function useSetPaused() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (paused: boolean) => api.gatewaySetPaused({ paused }),
    onSuccess: (status) => qc.setQueryData(queryKeys.gateway, status),
  });
}

export function useSummaryQuery() {
  const api = useApi();
  // The request log has no change event; refresh it on a gentle timer.
  return useQuery({ queryKey: queryKeys.summary, queryFn: () => api.monitoringSummary(), refetchInterval: 15_000 });
}

export function useCreateKey() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (request: ApiKeyCreateRequest) => api.keysCreate(request),
    onSuccess: () => qc.invalidateQueries({ queryKey: queryKeys.keys }),
  });
}

export function useDeleteKey() {
  const api = useApi();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => api.keysDelete(id),
    onSuccess: () => qc.invalidateQueries({ queryKey: queryKeys.keys }),
  });
}

/** Whether each agent (Claude Code, Codex) is set up to use this gateway, and its file. */
export function useSetupQuery() {
  const api = useApi();
  return useQuery({ queryKey: queryKeys.setup, queryFn: () => api.setupList() });
}

/** Setup makes a client key for the agent: the key list changes with it. */
function useRefreshSetup() {
  const qc = useQueryClient();
  return () => {
    void qc.invalidateQueries({ queryKey: queryKeys.setup });
    void qc.invalidateQueries({ queryKey: queryKeys.keys });
  };
}

export function useSetupApply() {
  const api = useApi();
  const refresh = useRefreshSetup();
  return useMutation({ mutationFn: (agent: string) => api.setupApply(agent), onSettled: refresh });
}

export function useSetupUndo() {
  const api = useApi();
  const refresh = useRefreshSetup();
  return useMutation({
    mutationFn: ({ agent, force }: { agent: string; force: boolean }) => api.setupUndo(agent, force),
    onSettled: refresh,
  });
}

// Connections queries and mutations.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { ConnectionCreateRequest, ConnectionPatch, ConnectionView } from "../../ipc/bindings";

export { useConnectionsQuery, useCooldownsQuery } from "../../api/sharedQueries";

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

export function useUpdateConnection() {
  const api = useApi();
  const qc = useQueryClient();
  const refresh = useRefreshConnections();
  return useMutation({
    mutationFn: ({ id, patch }: { id: string; patch: ConnectionPatch }) => api.connectionsUpdate(id, patch),
    onSuccess: (updated) => {
      qc.setQueryData<ConnectionView[]>(queryKeys.connections, (list) =>
        list?.map((c) => (c.id === updated.id ? updated : c)),
      );
      refresh();
    },
  });
}

export function useDeleteConnection() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({ mutationFn: (id: string) => api.connectionsDelete(id), onSuccess: refresh });
}

export function useTestConnection() {
  const api = useApi();
  const refresh = useRefreshConnections();
  return useMutation({ mutationFn: (id: string) => api.connectionsTest(id), onSettled: refresh });
}

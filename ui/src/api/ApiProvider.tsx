// Provides the chosen Api adapter and the TanStack Query client to the app, and turns
// change events into query invalidations.
import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { createContext, useContext, useEffect, useState, type ReactNode } from "react";
import { ApiError } from "./ApiError";
import { EVENT_INVALIDATIONS } from "./queryKeys";
import type { Api, LiveMode } from "./types";

type ApiContextValue = { api: Api; liveMode: LiveMode | null };

const ApiContext = createContext<ApiContextValue | null>(null);

/** The Api adapter of the running app. */
export function useApi(): Api {
  const ctx = useContext(ApiContext);
  if (!ctx) throw new Error("useApi() outside <ApiProvider>");
  return ctx.api;
}

/** Whether live updates are pushed or polled (null before the first report). */
export function useLiveMode(): LiveMode | null {
  return useContext(ApiContext)?.liveMode ?? null;
}

/** A query client with the app's defaults: no retries of client errors. */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 5_000,
        retry: (failures, error) => {
          if (error instanceof ApiError && error.status !== null && error.status < 500) return false;
          if (error instanceof ApiError && ["validation_failed", "not_found", "ipc_error"].includes(error.code)) {
            return false;
          }
          return failures < 2;
        },
      },
      mutations: { retry: false },
    },
  });
}

export function ApiProvider({
  api,
  queryClient,
  children,
}: {
  api: Api;
  queryClient?: QueryClient;
  children: ReactNode;
}) {
  const [client] = useState(() => queryClient ?? createQueryClient());
  return (
    <QueryClientProvider client={client}>
      <EventBridge api={api}>{children}</EventBridge>
    </QueryClientProvider>
  );
}

function EventBridge({ api, children }: { api: Api; children: ReactNode }) {
  const qc = useQueryClient();
  const [liveMode, setLiveMode] = useState<LiveMode | null>(null);
  useEffect(() => {
    return api.subscribe(
      (name) => {
        for (const queryKey of EVENT_INVALIDATIONS[name]) void qc.invalidateQueries({ queryKey });
      },
      (mode) => setLiveMode(mode),
    );
  }, [api, qc]);
  return <ApiContext.Provider value={{ api, liveMode }}>{children}</ApiContext.Provider>;
}

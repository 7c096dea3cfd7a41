// Request log queries: the client requests, newest first, filtered and paged with
// `before`; one request's detail (its attempts and why it went where it went). No
// event announces a new request, so the list is polled while the page is shown
// (TanStack Query pauses the interval while the window is hidden) and refetched on
// the events that come with failures (cooldowns, breakers, connections).
import { keepPreviousData, useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useApi } from "../../api/ApiProvider";
import { queryKeys } from "../../api/queryKeys";
import type { RequestsQuery } from "../../ipc/bindings";

export { useConnectionsQuery, useKeysQuery } from "../../api/sharedQueries";

/** Rows per page ("Load more" fetches the next page, older). */
export const PAGE_SIZE = 50;
/** How often the list is refetched while shown. */
export const REQUESTS_POLL_MS = 2_000;

export type StatusFilter = "" | "ok" | "error" | "code";
export type TimeRange = "15m" | "1h" | "1d" | "all";

export type RequestFilters = {
  status: StatusFilter;
  /** The status code, when `status` is "code". */
  code: string;
  connection: string;
  model: string;
  key: string;
  range: TimeRange;
};

export const NO_FILTERS: RequestFilters = { status: "", code: "", connection: "", model: "", key: "", range: "all" };

export const RANGE_MS: Record<Exclude<TimeRange, "all">, number> = {
  "15m": 15 * 60_000,
  "1h": 3_600_000,
  "1d": 86_400_000,
};

/** A status code the gateway can filter by: three digits, 100–599. */
export function validCode(code: string): boolean {
  return /^[1-5]\d\d$/.test(code.trim());
}

/** The API query for one page: the filters (the time range ending now), older than `before`. */
export function toQuery(filters: RequestFilters, before: string | null, now: number): RequestsQuery {
  const status =
    filters.status === "code" ? (validCode(filters.code) ? filters.code.trim() : null) : filters.status || null;
  return {
    limit: PAGE_SIZE,
    before,
    status,
    connection: filters.connection || null,
    model: filters.model.trim() || null,
    key: filters.key || null,
    since: filters.range === "all" ? null : now - RANGE_MS[filters.range],
    until: null,
  };
}

export function useRequestsQuery(filters: RequestFilters) {
  const api = useApi();
  return useInfiniteQuery({
    queryKey: [...queryKeys.requests, "list", filters],
    queryFn: ({ pageParam }) => api.requestsList(toQuery(filters, pageParam, Date.now())),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.length < PAGE_SIZE ? undefined : last[last.length - 1].requestId),
    refetchInterval: REQUESTS_POLL_MS,
    placeholderData: keepPreviousData,
  });
}

/** One request's detail; a request never changes once logged. */
export function useRequestDetail(requestId: string | null) {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.request(requestId ?? ""),
    queryFn: () => api.requestGet(requestId!),
    enabled: requestId !== null,
    staleTime: Infinity,
  });
}

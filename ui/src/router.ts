// A tiny hash router (`#/overview`, `#/connections`, ...): works the same under the
// Tauri custom protocol and under the gateway's `/ui/` path.
import { useSyncExternalStore } from "react";

export const ROUTES = [
  { id: "overview", label: "Overview" },
  { id: "connections", label: "Connections" },
  { id: "requests", label: "Requests" },
  { id: "combos", label: "Combos" },
  { id: "resilience", label: "Resilience" },
  { id: "model-lockout", label: "Model Lockout" },
  { id: "cooldowns", label: "Cooldown Manager" },
  { id: "leases", label: "Leases" },
] as const;

export type RouteId = (typeof ROUTES)[number]["id"];

export const DEFAULT_ROUTE: RouteId = "overview";

export function routeFromHash(hash: string): RouteId {
  const id = hash.replace(/^#\/?/, "").split(/[?/]/)[0];
  return (ROUTES.find((r) => r.id === id)?.id ?? DEFAULT_ROUTE) as RouteId;
}

/** The route's one parameter (`#/requests/abc` → "abc"), decoded; null when there is none. */
export function paramFromHash(hash: string): string | null {
  const rest = hash.replace(/^#\/?/, "").split("?")[0].split("/");
  if (rest.length < 2 || rest[1] === "") return null;
  try {
    return decodeURIComponent(rest[1]);
  } catch {
    return null;
  }
}

/** `#/overview`; with a parameter, `#/requests/abc`. */
export function hrefFor(id: RouteId, param?: string): string {
  return param === undefined ? `#/${id}` : `#/${id}/${encodeURIComponent(param)}`;
}

function subscribe(cb: () => void): () => void {
  window.addEventListener("hashchange", cb);
  return () => window.removeEventListener("hashchange", cb);
}

/** The current route's parameter (see `paramFromHash`). */
export function useRouteParam(): string | null {
  return useSyncExternalStore(
    subscribe,
    () => paramFromHash(window.location.hash),
    () => null,
  );
}

export function useRoute(): RouteId {
  return useSyncExternalStore(
    subscribe,
    () => routeFromHash(window.location.hash),
    () => DEFAULT_ROUTE,
  );
}

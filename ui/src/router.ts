// A tiny hash router (`#/overview`, `#/connections`, ...): works the same under the
// Tauri custom protocol and under the gateway's `/ui/` path.
import { useSyncExternalStore } from "react";

export const ROUTES = [
  { id: "overview", label: "Overview" },
  { id: "connections", label: "Connections" },
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

export function hrefFor(id: RouteId): string {
  return `#/${id}`;
}

function subscribe(cb: () => void): () => void {
  window.addEventListener("hashchange", cb);
  return () => window.removeEventListener("hashchange", cb);
}

export function useRoute(): RouteId {
  return useSyncExternalStore(
    subscribe,
    () => routeFromHash(window.location.hash),
    () => DEFAULT_ROUTE,
  );
}

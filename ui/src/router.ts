// A tiny hash router (`#/overview`, `#/connections`, ...): works the same under the
// Tauri custom protocol and under the gateway's `/ui/` path. Leaving a page whose
// forms have unsaved edits asks first (shared/unsavedChanges.ts); declined, the
// address goes back to the page being left.
import { useSyncExternalStore } from "react";
import { confirmLeave } from "./shared/unsavedChanges";

export const ROUTES = [
  { id: "overview", label: "Overview" },
  { id: "connections", label: "Connections" },
  { id: "requests", label: "Requests" },
  { id: "combos", label: "Combos" },
  { id: "resilience", label: "Resilience" },
  { id: "model-lockout", label: "Model Lockout" },
  { id: "cooldowns", label: "Cooldown Manager" },
  { id: "leases", label: "Leases" },
  // The desktop app's own settings: listed only there (they need its commands).
  { id: "preferences", label: "Preferences", desktopOnly: true },
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

const listeners = new Set<() => void>();
/** The address of the page shown (restored when leaving it is declined). */
let shownHash = "";
/** Set by a link that already asked (`allowNextLeave`): its hash change does not ask again. */
let leaveAllowed = false;

function onHashChange() {
  const next = window.location.hash;
  const leaving = routeFromHash(next) !== routeFromHash(shownHash);
  if (leaving && !leaveAllowed && !confirmLeave()) {
    window.history.replaceState(window.history.state, "", shownHash === "" ? hrefFor(DEFAULT_ROUTE) : shownHash);
    return;
  }
  leaveAllowed = false;
  shownHash = next;
  for (const l of listeners) l();
}

function subscribe(cb: () => void): () => void {
  if (listeners.size === 0) {
    shownHash = window.location.hash;
    window.addEventListener("hashchange", onHashChange);
  }
  listeners.add(cb);
  return () => {
    listeners.delete(cb);
    if (listeners.size === 0) window.removeEventListener("hashchange", onHashChange);
  };
}

/**
 * Asks before a link leaves the page (nothing to ask without unsaved edits): false
 * when the user stays. Confirmed, the link's hash change is not asked about again.
 */
export function askToLeave(): boolean {
  if (!confirmLeave()) return false;
  leaveAllowed = true;
  return true;
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

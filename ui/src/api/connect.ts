// Chooses the transport at start: Tauri IPC inside the desktop app, otherwise the
// REST API on this page's origin with the management token (from `#token=...`, which
// is then removed from the URL, or from sessionStorage).

export const TOKEN_STORAGE_KEY = "switchyard.managementToken";

export type Connection = { transport: "ipc" } | { transport: "http"; baseUrl: string; token: string | null };

/** Takes a `#token=...` fragment out of the URL (keeping any route) and returns it. */
export function takeTokenFromLocation(loc: Location = window.location, hist: History = window.history): string | null {
  const match = /(?:^#|[#&?])token=([^&]+)/.exec(loc.hash);
  if (!match) return null;
  const token = decodeURIComponent(match[1]);
  const route = /#\/[a-z-]+/.exec(loc.hash)?.[0] ?? "#/overview";
  hist.replaceState(hist.state, "", `${loc.pathname}${loc.search}${route}`);
  return token;
}

export function detectConnection(): Connection {
  if (typeof window !== "undefined" && "__TAURI_INTERNALS__" in window) return { transport: "ipc" };
  const fromUrl = takeTokenFromLocation();
  if (fromUrl) sessionStorage.setItem(TOKEN_STORAGE_KEY, fromUrl);
  const token = fromUrl ?? sessionStorage.getItem(TOKEN_STORAGE_KEY);
  return { transport: "http", baseUrl: window.location.origin, token };
}

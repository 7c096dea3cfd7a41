// The browser adapter: the REST twins of the IPC commands, authenticated with the
// management token. Error bodies `{"error": {code, message, issues}}` become ApiError;
// 204 resolves with null. Writes of versioned documents send the version they were
// made to as `If-Match: "N"` (a stale one answers 412 `precondition_failed`). Live
// events come from `GET /api/events` (SSE).
import { ApiError, PRECONDITION_FAILED } from "./ApiError";
import { subscribeSse } from "./sse";
import type { Api } from "./types";
import { ifMatch, withoutVersion, type ExpectedVersion } from "./versions";

export type HttpApiOptions = {
  /** Called when the gateway rejects the management token. */
  onUnauthorized?: () => void;
  fetchImpl?: typeof fetch;
};

type Method = "GET" | "POST" | "PATCH" | "DELETE";

export function createHttpApi(baseUrl: string, token: string, options: HttpApiOptions = {}): Api {
  const base = baseUrl.replace(/\/+$/, "");
  const doFetch: typeof fetch = options.fetchImpl ?? ((input, init) => fetch(input, init));

  async function request<T>(method: Method, path: string, body?: unknown, expected?: ExpectedVersion): Promise<T> {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (typeof expected === "number") headers["If-Match"] = ifMatch(expected);
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      throw new ApiError("network_error", `Cannot reach the gateway at ${base} (${reason}).`);
    }
    if (res.status === 204) return null as T;
    const text = await res.text();
    let json: unknown = undefined;
    if (text !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    if (!res.ok) {
      if (res.status === 401) options.onUnauthorized?.();
      const doc = (json as { error?: unknown } | undefined)?.error;
      if (doc !== undefined) throw ApiError.from(doc, res.status);
      if (res.status === 412) {
        throw new ApiError(
          PRECONDITION_FAILED,
          "The document changed elsewhere since the version this change was made to.",
          [],
          412,
        );
      }
      throw new ApiError(`http_${res.status}`, `The gateway answered HTTP ${res.status} ${res.statusText}`.trim(), [], res.status);
    }
    if (json === undefined) {
      throw new ApiError("invalid_response", `The gateway sent a response that is not JSON (${method} ${path}).`, [], res.status);
    }
    return json as T;
  }

  const id = encodeURIComponent;

  return {
    transport: "http",
    connectionsList: () => request("GET", "/api/providers"),
    connectionsGet: (cid) => request("GET", `/api/providers/${id(cid)}`),
    connectionsCreate: (req) => request("POST", "/api/providers", req),
    connectionsUpdate: (cid, patch, v) => request("PATCH", `/api/providers/${id(cid)}`, patch, v),
    connectionsDelete: (cid, v) => request("DELETE", `/api/providers/${id(cid)}`, undefined, v),
    connectionsTest: (cid) => request("POST", `/api/providers/${id(cid)}/test`),
    connectionsImportClaudeLogin: (req) => request("POST", "/api/providers/import-claude-login", req),
    keysList: () => request("GET", "/api/keys"),
    keysCreate: (req) => request("POST", "/api/keys", req),
    keysDelete: (kid) => request("DELETE", `/api/keys/${id(kid)}`),
    combosList: () => request("GET", "/api/combos"),
    combosPut: (combo, v) => request("POST", "/api/combos", withoutVersion(combo), v),
    combosDelete: (name, v) => request("DELETE", `/api/combos/${id(name)}`, undefined, v),
    aliasesList: () => request("GET", "/api/aliases"),
    aliasesPut: (alias, v) => request("POST", "/api/aliases", withoutVersion(alias), v),
    aliasesDelete: (from, v) => request("DELETE", `/api/aliases/${id(from)}`, undefined, v),
    monitoringHealth: () => request("GET", "/api/monitoring/health"),
    monitoringSummary: () => request("GET", "/api/monitoring/summary"),
    logsList: (query) => request("GET", `/api/logs${queryString(query)}`),
    requestsList: (query) => request("GET", `/api/requests${queryString(query)}`),
    requestGet: (rid) => request("GET", `/api/requests/${id(rid)}`),
    presetsList: () => request("GET", "/api/presets"),
    rateLimitsGet: () => request("GET", "/api/rate-limits"),
    sessionsList: () => request("GET", "/api/sessions"),
    sessionsClear: (req) => request("DELETE", "/api/sessions", req),
    leasesList: () => request("GET", "/api/leases"),
    leasesRelease: (lid) => request("DELETE", `/api/leases/${lid}`),
    resilienceGet: () => request("GET", "/api/resilience"),
    resiliencePatch: (patch, v) => request("PATCH", "/api/resilience", stripNulls(patch), v),
    resilienceDefaults: () => request("GET", "/api/resilience/defaults"),
    resilienceRanges: () => request("GET", "/api/resilience/ranges"),
    breakersList: () => request("GET", "/api/resilience/breakers"),
    breakersReset: (req) => request("POST", "/api/resilience/reset", req),
    cooldownsList: (provider) =>
      request("GET", `/api/resilience/cooldowns${provider ? `?provider=${id(provider)}` : ""}`),
    cooldownsClear: (req) => request("POST", "/api/resilience/cooldowns", req),
    lockoutsList: () => request("GET", "/api/resilience/model-cooldowns"),
    lockoutsClear: (req) => request("DELETE", "/api/resilience/model-cooldowns", req),
    modelLockoutGet: () => request("GET", "/api/resilience/model-lockout"),
    modelLockoutPatch: (patch, v) => request("PATCH", "/api/resilience/model-lockout", patch, v),
    setupList: () => request("GET", "/api/setup"),
    setupApply: (agent) => request("POST", `/api/setup/${id(agent)}`),
    setupUndo: (agent, force) => request("DELETE", `/api/setup/${id(agent)}${force ? "?force=true" : ""}`),
    gatewayStatus: () => request("GET", "/api/gateway"),
    gatewaySetPaused: (req) => request("POST", "/api/gateway/pause", req),
    subscribe: (onEvent, onMode) =>
      subscribeSse({ url: `${base}/api/events`, token, fetchImpl: doFetch, onEvent, onMode }),
  };
}

/** `?a=1&b=x` of a query's set fields (null and undefined are left out); "" when none is set. */
export function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== null && v !== undefined) params.set(k, String(v));
  const qs = params.toString();
  return qs ? `?${qs}` : "";
}

/**
 * Drops top-level `null` groups of a settings patch: absent and null both mean
 * "keep" for a group, and absent keeps the request body small and readable.
 */
function stripNulls<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== null)) as Partial<T>;
}

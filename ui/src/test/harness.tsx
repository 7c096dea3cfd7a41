// Renders UI over the REAL ipcApi adapter and generated bindings, with Tauri's
// mockIPC answering the commands (snake_case names, as tauri-specta invokes them).
import { QueryClient } from "@tanstack/react-query";
import { mockIPC } from "@tauri-apps/api/mocks";
import { render } from "@testing-library/react";
import type { ReactElement } from "react";
import type { ComboView, ConnectionView, ResilienceSettings, Versioned } from "../ipc/bindings";
import { ApiProvider } from "../api/ApiProvider";
import { createIpcApi } from "../api/ipcApi";
import * as f from "./fixtures";

export type Handler = (args: Record<string, unknown>) => unknown;
export type Handlers = Record<string, Handler>;
export type Call = { cmd: string; args: Record<string, unknown> };

/** A handler that never answers (loading states). */
export const pending: Handler = () => new Promise(() => {});

/** A handler that fails with an IpcError document. */
export const fails =
  (code: string, message: string, issues: { path: string; message: string }[] = []): Handler =>
  () =>
    Promise.reject({ code, message, issues });

/** Answers for every command a page may call; tests override what they exercise. */
export function defaultHandlers(): Handlers {
  return {
    gateway_status: () => f.gatewayStatus(),
    gateway_set_paused: (a) => f.gatewayStatus({ paused: (a.request as { paused: boolean }).paused }),
    keys_list: () => [],
    setup_list: () => [
      { agent: "claude-code", path: "/home/u/.claude/settings.json", configured: false },
      { agent: "codex", path: "/home/u/.codex/config.toml", configured: false },
    ],
    monitoring_summary: () => f.summary(),
    monitoring_health: () => f.health(),
    desktop_prefs_get: () => f.desktopPrefs(),
    desktop_status: () => ({ running: true, listen: "127.0.0.1:7821", error: null }),
    desktop_set_unsaved_edits: () => null,
    desktop_close_window: () => null,
    connections_list: () => [],
    combos_list: () => [],
    rate_limits_get: () => f.rateLimits(),
    sessions_list: () => ({ ttlMs: 0, pins: [] }),
    leases_list: () => ({ leases: [] }),
    cooldowns_list: () => [],
    lockouts_list: () => [],
    breakers_list: () => [],
    resilience_get: () => f.resilienceSettings(),
    resilience_defaults: () => f.resilienceDefaults(),
    resilience_ranges: () => f.ranges(),
    model_lockout_get: () => f.modelLockoutSettings(),
    requests_list: () => [],
    presets_list: () => f.presets(),
    connections_test: () => ({ ok: true, status: 200, latencyMs: 5, message: "the upstream accepted the credentials" }),
  };
}

/** Installs the IPC mock; returns the list of calls it receives. */
export function mockCommands(overrides: Handlers = {}): Call[] {
  const handlers = { ...defaultHandlers(), ...overrides };
  const calls: Call[] = [];
  mockIPC(
    (cmd, payload) => {
      const args = (payload ?? {}) as Record<string, unknown>;
      calls.push({ cmd, args });
      const h = handlers[cmd];
      if (!h) return Promise.reject(`command ${cmd} not mocked`);
      return h(args);
    },
    { shouldMockEvents: true },
  );
  return calls;
}

export function testQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: { queries: { retry: false, gcTime: Infinity }, mutations: { retry: false } },
  });
}

/** Renders `ui` inside the ApiProvider with the IPC adapter. */
export function renderWithIpc(ui: ReactElement, overrides: Handlers = {}) {
  const calls = mockCommands(overrides);
  const queryClient = testQueryClient();
  const result = render(
    <ApiProvider api={createIpcApi()} queryClient={queryClient}>
      {ui}
    </ApiProvider>,
  );
  return { ...result, calls, queryClient };
}

export function callsOf(calls: Call[], cmd: string): Call[] {
  return calls.filter((c) => c.cmd === cmd);
}

/** The IpcError of a write whose expected version is not the stored one. */
function stale(what: string, expected: unknown, version: number) {
  return Promise.reject({
    code: "precondition_failed",
    message: `${what} changed since version ${String(expected)} (now ${version}); reload it and try again`,
    issues: [],
  });
}

/**
 * A settings document that checks versions like the gateway: reads answer it with
 * its version, a write naming another version is refused with `precondition_failed`,
 * an accepted one increments the version. `changeElsewhere` is another client's write.
 */
export function versionedSettings(initial: Versioned<ResilienceSettings> = f.resilienceSettings()) {
  let doc = structuredClone(initial);
  const apply = (groups: Record<string, unknown>) => {
    const kept = Object.fromEntries(Object.entries(groups).filter(([, v]) => v !== null));
    doc = { ...doc, ...kept, version: doc.version + 1 };
  };
  const handlers: Handlers = {
    resilience_get: () => structuredClone(doc),
    model_lockout_get: () => ({ ...structuredClone(doc.modelLockout), version: doc.version }),
    resilience_patch: (a) => {
      if (a.expectedVersion != null && a.expectedVersion !== doc.version) {
        return stale("the settings", a.expectedVersion, doc.version);
      }
      apply(a.patch as Record<string, unknown>);
      return structuredClone(doc);
    },
    model_lockout_patch: (a) => {
      if (a.expectedVersion != null && a.expectedVersion !== doc.version) {
        return stale("the settings", a.expectedVersion, doc.version);
      }
      apply({ modelLockout: { ...doc.modelLockout, ...(a.patch as object) } });
      return { ...structuredClone(doc.modelLockout), version: doc.version };
    },
  };
  return {
    handlers,
    get doc(): Versioned<ResilienceSettings> {
      return structuredClone(doc);
    },
    /** Another client's accepted write of whole groups. */
    changeElsewhere(groups: Partial<ResilienceSettings>) {
      apply(groups);
    },
  };
}

/**
 * Connections that check versions like the gateway (list, get, update, delete);
 * `changeElsewhere` is another client's write.
 */
export function versionedConnections(initial: ConnectionView[]) {
  let list = structuredClone(initial);
  const find = (id: unknown) => list.find((c) => c.id === id);
  const missing = (id: unknown) =>
    Promise.reject({ code: "not_found", message: `connection '${String(id)}' not found`, issues: [] });
  const write = (id: unknown, change: (c: ConnectionView) => ConnectionView) => {
    list = list.map((c) => (c.id === id ? { ...change(c), version: c.version + 1 } : c));
    return structuredClone(find(id)!);
  };
  const handlers: Handlers = {
    connections_list: () => structuredClone(list),
    connections_get: (a) => (find(a.id) ? structuredClone(find(a.id)!) : missing(a.id)),
    connections_update: (a) => {
      const c = find(a.id);
      if (!c) return missing(a.id);
      if (a.expectedVersion != null && a.expectedVersion !== c.version) {
        return stale(`connection '${c.id}'`, a.expectedVersion, c.version);
      }
      const { apiKey, accessToken, refreshToken, providerSpecific, ...rest } = a.patch as Record<string, unknown>;
      return write(a.id, (cur) => ({
        ...cur,
        ...(rest as Partial<ConnectionView>),
        hasSecret: cur.hasSecret || Boolean(apiKey || accessToken),
        hasRefreshToken: cur.hasRefreshToken || Boolean(refreshToken),
        providerSpecific: {
          ...(cur.providerSpecific as object),
          ...((providerSpecific as object | undefined) ?? {}),
        } as ConnectionView["providerSpecific"],
      }));
    },
    connections_delete: (a) => {
      const c = find(a.id);
      if (!c) return missing(a.id);
      if (a.expectedVersion != null && a.expectedVersion !== c.version) {
        return stale(`connection '${c.id}'`, a.expectedVersion, c.version);
      }
      list = list.filter((x) => x.id !== a.id);
      return null;
    },
  };
  return {
    handlers,
    get(id: string): ConnectionView | undefined {
      return structuredClone(find(id));
    },
    /** Another client's accepted change of one connection. */
    changeElsewhere(id: string, change: Partial<ConnectionView>) {
      write(id, (c) => ({ ...c, ...change }));
    },
  };
}

/**
 * Combos that check versions like the gateway (list, put, delete; a new combo is at
 * version 0; a delete of a combo another one targets is a 409 `conflict`);
 * `changeElsewhere` is another client's write.
 */
export function versionedCombos(initial: Versioned<ComboView>[]) {
  let list = structuredClone(initial);
  const find = (name: unknown) => list.find((c) => c.name === name);
  const handlers: Handlers = {
    combos_list: () => structuredClone(list),
    combos_put: (a) => {
      const combo = a.combo as ComboView;
      const current = find(combo.name);
      const version = current?.version ?? 0;
      if (a.expectedVersion != null && a.expectedVersion !== version) {
        return stale(`combo '${combo.name}'`, a.expectedVersion, version);
      }
      const saved = { ...structuredClone(combo), version: version + 1 };
      list = current ? list.map((c) => (c.name === combo.name ? saved : c)) : [...list, saved];
      return structuredClone(saved);
    },
    combos_delete: (a) => {
      const current = find(a.name);
      if (!current) return Promise.reject({ code: "not_found", message: `combo '${String(a.name)}' does not exist`, issues: [] });
      if (a.expectedVersion != null && a.expectedVersion !== current.version) {
        return stale(`combo '${current.name}'`, a.expectedVersion, current.version);
      }
      const referrers = list.filter((c) => c.name !== a.name && c.targets.some((t) => t.model === a.name));
      if (referrers.length) {
        return Promise.reject({
          code: "conflict",
          message: `combo '${current.name}' is a target of combo(s) ${referrers.map((c) => c.name).join(", ")}: remove it there first`,
          issues: [],
        });
      }
      list = list.filter((c) => c.name !== a.name);
      return null;
    },
  };
  return {
    handlers,
    get(name: string): Versioned<ComboView> | undefined {
      return structuredClone(find(name));
    },
    /** Another client's accepted change of one combo. */
    changeElsewhere(name: string, change: Partial<ComboView>) {
      list = list.map((c) => (c.name === name ? { ...c, ...change, version: c.version + 1 } : c));
    },
  };
}

// Renders UI over the REAL ipcApi adapter and generated bindings, with Tauri's
// mockIPC answering the commands (snake_case names, as tauri-specta invokes them).
import { QueryClient } from "@tanstack/react-query";
import { mockIPC } from "@tauri-apps/api/mocks";
import { render } from "@testing-library/react";
import type { ReactElement } from "react";
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
    monitoring_summary: () => f.summary(),
    monitoring_health: () => f.health(),
    desktop_prefs_get: () => f.desktopPrefs(),
    desktop_status: () => ({ running: true, listen: "127.0.0.1:7821", error: null }),
    connections_list: () => [],
    cooldowns_list: () => [],
    lockouts_list: () => [],
    breakers_list: () => [],
    resilience_get: () => f.resilienceDefaults(),
    resilience_defaults: () => f.resilienceDefaults(),
    resilience_ranges: () => f.ranges(),
    model_lockout_get: () => f.resilienceDefaults().modelLockout,
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

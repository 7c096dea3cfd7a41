import { useQuery } from "@tanstack/react-query";
import { act, render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { events } from "../ipc/bindings";
import * as f from "../test/fixtures";
import { callsOf, mockCommands, testQueryClient } from "../test/harness";
import { ApiError } from "./ApiError";
import { ApiProvider, useApi } from "./ApiProvider";
import { createIpcApi } from "./ipcApi";
import { EVENT_INVALIDATIONS, queryKeys } from "./queryKeys";

describe("ipcApi", () => {
  it("invokes the snake_case command with camelCase arguments and unwraps the result", async () => {
    const calls = mockCommands({
      connections_update: (a) => ({ id: a.id, name: "renamed" }),
      sessions_clear: () => ({ removed: 0 }),
      leases_release: () => ({ released: 1 }),
      request_get: () => f.failedOverDetail(),
    });
    const api = createIpcApi();
    await expect(api.connectionsUpdate("c1", { name: "renamed" } as never, 4)).resolves.toEqual({
      id: "c1",
      name: "renamed",
    });
    expect(callsOf(calls, "connections_update")[0].args).toEqual({
      id: "c1",
      patch: { name: "renamed" },
      expectedVersion: 4,
    });
    await api.cooldownsList("glm");
    expect(callsOf(calls, "cooldowns_list")[0].args).toEqual({ provider: "glm" });
    await api.rateLimitsGet();
    expect(callsOf(calls, "rate_limits_get")).toHaveLength(1);
    await expect(api.sessionsList()).resolves.toEqual({ ttlMs: 0, pins: [] });
    await api.sessionsClear({ connection: "c1" });
    expect(callsOf(calls, "sessions_clear")[0].args).toEqual({ clear: { connection: "c1" } });
    await expect(api.leasesList()).resolves.toEqual({ leases: [] });
    await expect(api.leasesRelease(3)).resolves.toEqual({ released: 1 });
    expect(callsOf(calls, "leases_release")[0].args).toEqual({ id: 3 });
    await api.requestsList({ limit: 10, before: "r1" });
    expect(callsOf(calls, "requests_list")[0].args).toEqual({ query: { limit: 10, before: "r1" } });
    await api.requestGet("r1");
    expect(callsOf(calls, "request_get")[0].args).toEqual({ requestId: "r1" });
    await expect(api.presetsList()).resolves.toHaveLength(3);
  });

  it("rejects with ApiError carrying the IpcError document", async () => {
    mockCommands({
      resilience_patch: () =>
        Promise.reject({
          code: "validation_failed",
          message: "1 invalid field",
          issues: [{ path: "/sessionAffinityTtlMs", message: "must be a whole number from 0 to 604,800,000 ms" }],
        }),
    });
    const err = await createIpcApi()
      .resiliencePatch({} as never, 1)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      code: "validation_failed",
      issues: [{ path: "/sessionAffinityTtlMs", message: "must be a whole number from 0 to 604,800,000 ms" }],
    });
  });

  it("passes the version every write was made to as expectedVersion (null: none)", async () => {
    const calls = mockCommands({
      resilience_patch: () => ({ version: 8 }),
      model_lockout_patch: () => ({ version: 9 }),
      connections_delete: () => null,
      combos_put: (a) => ({ ...(a.combo as object), version: 1 }),
      combos_delete: () => null,
      aliases_put: (a) => ({ ...(a.alias as object), version: 3 }),
      aliases_delete: () => null,
    });
    const api = createIpcApi();
    await expect(api.resiliencePatch({ sessionAffinityTtlMs: 5 } as never, 7)).resolves.toEqual({ version: 8 });
    await api.modelLockoutPatch({ enabled: true } as never, 8);
    await api.connectionsDelete("c1", 4);
    // The stored combo comes back with its version; the body keeps to ComboView's shape.
    await expect(api.combosPut({ name: "fast", targets: [], version: 0 } as never, 0)).resolves.toEqual({
      name: "fast",
      targets: [],
      version: 1,
    });
    await api.combosDelete("fast", 1);
    await api.aliasesPut({ from: "a", to: "b" } as never, 2);
    await api.aliasesDelete("a", null);
    expect(calls.map((c) => [c.cmd, c.args])).toEqual([
      ["resilience_patch", { patch: { sessionAffinityTtlMs: 5 }, expectedVersion: 7 }],
      ["model_lockout_patch", { patch: { enabled: true }, expectedVersion: 8 }],
      ["connections_delete", { id: "c1", expectedVersion: 4 }],
      ["combos_put", { combo: { name: "fast", targets: [] }, expectedVersion: 0 }],
      ["combos_delete", { name: "fast", expectedVersion: 1 }],
      ["aliases_put", { alias: { from: "a", to: "b" }, expectedVersion: 2 }],
      ["aliases_delete", { from: "a", expectedVersion: null }],
    ]);
  });

  it("rejects a stale write with ApiError precondition_failed", async () => {
    mockCommands({
      connections_update: () =>
        Promise.reject({ code: "precondition_failed", message: "connection 'c1' changed since version 3", issues: [] }),
    });
    const err = await createIpcApi()
      .connectionsUpdate("c1", {} as never, 3)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: "precondition_failed", isPreconditionFailed: true, status: null });
  });

  it("turns a bare string rejection (unknown command) into an ApiError", async () => {
    mockCommands({});
    await expect(createIpcApi().aliasesList()).rejects.toMatchObject({ code: "ipc_error" });
  });
});

function BreakerCount() {
  const api = useApi();
  const q = useQuery({ queryKey: queryKeys.breakers, queryFn: () => api.breakersList() });
  return <p>breakers: {q.data?.length ?? "…"}</p>;
}

describe("events", () => {
  it("every event about a source of a connection's status makes the connections and the health document stale", () => {
    for (const name of ["breakersChanged", "cooldownsChanged", "lockoutsChanged", "lanesChanged", "connectionsChanged", "routingChanged"] as const) {
      expect(EVENT_INVALIDATIONS[name], name).toEqual(expect.arrayContaining([queryKeys.connections, queryKeys.health]));
    }
    // New requests come with failures: the log follows those events (and is polled).
    for (const name of ["breakersChanged", "cooldownsChanged", "connectionsChanged"] as const) {
      expect(EVENT_INVALIDATIONS[name], name).toContain(queryKeys.requests);
    }
  });

  it("breakersChanged invalidates the breakers query", async () => {
    let n = 0;
    const calls = mockCommands({ breakers_list: () => Array.from({ length: ++n }, () => ({})) });
    render(
      <ApiProvider api={createIpcApi()} queryClient={testQueryClient()}>
        <BreakerCount />
      </ApiProvider>,
    );
    expect(await screen.findByText("breakers: 1")).toBeInTheDocument();
    // Wait for the listeners to be registered before emitting.
    await waitFor(() => expect(callsOf(calls, "breakers_list")).toHaveLength(1));
    await act(async () => {
      await new Promise((r) => setTimeout(r, 10));
      await events.breakersChanged.emit({ at: 1 });
    });
    expect(await screen.findByText("breakers: 2")).toBeInTheDocument();
  });
});

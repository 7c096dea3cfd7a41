import { useQuery } from "@tanstack/react-query";
import { act, render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { events } from "../ipc/bindings";
import { callsOf, mockCommands, testQueryClient } from "../test/harness";
import { ApiError } from "./ApiError";
import { ApiProvider, useApi } from "./ApiProvider";
import { createIpcApi } from "./ipcApi";
import { queryKeys } from "./queryKeys";

describe("ipcApi", () => {
  it("invokes the snake_case command with camelCase arguments and unwraps the result", async () => {
    const calls = mockCommands({ connections_update: (a) => ({ id: a.id, name: "renamed" }) });
    const api = createIpcApi();
    await expect(api.connectionsUpdate("c1", { name: "renamed" } as never)).resolves.toEqual({
      id: "c1",
      name: "renamed",
    });
    expect(callsOf(calls, "connections_update")[0].args).toEqual({ id: "c1", patch: { name: "renamed" } });
    await api.cooldownsList("glm");
    expect(callsOf(calls, "cooldowns_list")[0].args).toEqual({ provider: "glm" });
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
      .resiliencePatch({} as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      code: "validation_failed",
      issues: [{ path: "/sessionAffinityTtlMs", message: "must be a whole number from 0 to 604,800,000 ms" }],
    });
  });

  it("turns a bare string rejection (unknown command) into an ApiError", async () => {
    mockCommands({});
    await expect(createIpcApi().combosList()).rejects.toMatchObject({ code: "ipc_error" });
  });
});

function BreakerCount() {
  const api = useApi();
  const q = useQuery({ queryKey: queryKeys.breakers, queryFn: () => api.breakersList() });
  return <p>breakers: {q.data?.length ?? "…"}</p>;
}

describe("events", () => {
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

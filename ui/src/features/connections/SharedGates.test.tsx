// The shared gates over the connection list (gateway-wide and per provider), live
// from `rate_limits_get`.
import { act, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LIVE_FLOW_POLL_MS } from "../../api/sharedQueries";
import type { GateView } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { renderWithIpc } from "../../test/harness";
import { ConnectionsPage } from "./ConnectionsPage";

afterEach(() => {
  vi.useRealTimers();
});

const gate = (cap: number, inFlight: number, queued: number): GateView => ({ cap, inFlight, queued });
const gateLines = () =>
  within(screen.getByRole("region", { name: "Shared concurrency caps" })).getAllByRole("listitem");

describe("ConnectionsPage: shared gates", () => {
  it("shows the gateway's gate and each provider's over the list, and flags a full one", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      rate_limits_get: () =>
        f.rateLimits({
          connections: [f.flow()],
          global: gate(4, 1, 2),
          providers: [
            { provider: "glm", gate: gate(2, 2, 1) },
            { provider: "openrouter", gate: gate(3, 0, 0) },
          ],
        }),
    });
    await screen.findByRole("region", { name: "Shared concurrency caps" });
    const [global, glm, openrouter] = gateLines();
    expect(global).toHaveTextContent(/^Gateway: 1 of 4 in flight, 2 queued$/);
    expect(glm).toHaveTextContent(/^Provider glm: 2 of 2 in flight, 1 queued At cap$/);
    expect(openrouter).toHaveTextContent(/^Provider openrouter: 0 of 3 in flight, 0 queued$/);
    expect(gateLines()).toHaveLength(3);
  });

  it("shows only the gates that exist", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      rate_limits_get: () => f.rateLimits({ providers: [{ provider: "glm", gate: gate(2, 0, 0) }] }),
    });
    await screen.findByRole("region", { name: "Shared concurrency caps" });
    expect(gateLines().map((l) => l.textContent)).toEqual(["Provider glm: 0 of 2 in flight, 0 queued"]);
  });

  it("shows nothing while no shared cap is set", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      rate_limits_get: () => f.rateLimits({ connections: [f.flow()] }),
    });
    await screen.findByRole("table", { name: "Connections" });
    await waitFor(() => expect(screen.getByRole("rowheader", { name: /GLM main/ }).closest("tr")).toHaveTextContent("0 in flight"));
    expect(screen.queryByRole("region", { name: "Shared concurrency caps" })).not.toBeInTheDocument();
  });

  it("follows the live poll", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    let inFlight = 0;
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      rate_limits_get: () => f.rateLimits({ global: gate(1, inFlight++, 0) }),
    });
    await screen.findByRole("region", { name: "Shared concurrency caps" });
    expect(gateLines()[0]).toHaveTextContent("Gateway: 0 of 1 in flight, 0 queued");
    await act(() => vi.advanceTimersByTimeAsync(LIVE_FLOW_POLL_MS));
    await waitFor(() => expect(gateLines()[0]).toHaveTextContent("Gateway: 1 of 1 in flight, 0 queued At cap"));
  });
});

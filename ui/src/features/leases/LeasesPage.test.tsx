// The Leases page: loading, error, the empty state, the live list (holder, connection,
// generation, times, a countdown), Release, and the refetch on `leasesChanged`.
import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { events, type LeaseView } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc, type Handlers } from "../../test/harness";
import { untilFirstLapse } from "./api";
import { LeasesPage } from "./LeasesPage";

/** `leases_list` and `leases_release` over one list, as the gateway keeps it. */
function liveLeases(initial: LeaseView[]) {
  let leases = [...initial];
  const handlers: Handlers = {
    connections_list: () => [f.connection()],
    leases_list: () => ({ leases }),
    leases_release: (a) => {
      if (!leases.some((l) => l.id === a.id)) {
        return Promise.reject({ code: "not_found", message: `lease ${String(a.id)} is not active`, issues: [] });
      }
      leases = leases.filter((l) => l.id !== a.id);
      return { released: 1 };
    },
  };
  return {
    handlers,
    /** Another client's change (an agent acquiring, say). */
    set(next: LeaseView[]) {
      leases = next;
    },
  };
}

const two = () => [
  f.lease(),
  f.lease({
    id: 2,
    keyId: "k-4f1c",
    keyName: null,
    provider: "anthropic",
    connection: "key-b",
    generation: 3,
    expiresAt: Date.now() + 3_600_000,
  }),
];

const rowOf = (holder: string) => screen.getByRole("rowheader", { name: holder }).closest("tr")!;

describe("LeasesPage", () => {
  it("shows the loading state", () => {
    renderWithIpc(<LeasesPage />, { leases_list: pending });
    expect(screen.getByText("Loading leases…")).toBeInTheDocument();
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<LeasesPage />, { leases_list: fails("internal_error", "store unavailable") });
    const box = (await screen.findByText("Could not load leases")).closest("[role=alert]") as HTMLElement;
    expect(box).toHaveTextContent("store unavailable");
    expect(within(box).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });

  it("explains what appears here when nothing is leased", async () => {
    renderWithIpc(<LeasesPage />);
    expect(await screen.findByText("No exclusive leases")).toBeInTheDocument();
    expect(screen.getByText(/lease:exclusive/).closest(".state")).toHaveTextContent(
      "POST /api/v1/session-leases. Its requests then use only that connection",
    );
    expect(screen.queryByRole("table")).not.toBeInTheDocument();
  });

  it("lists each lease with its holder, connection, generation, times and a live countdown", async () => {
    renderWithIpc(<LeasesPage />, liveLeases(two()).handlers);
    await screen.findByRole("table", { name: "Active leases" });
    const first = rowOf("agent");
    const cells = within(first).getAllByRole("cell").map((c) => c.textContent);
    expect(cells.slice(0, 3)).toEqual(["GLM mainglm-main", "glm", "1"]);
    expect(cells[3]).toMatch(/^5m ago$/);
    expect(cells[4]).toMatch(/^3[01]s ago$/);
    const countdown = within(first).getByText(/^1m (29|30)s$/);
    expect(countdown.tagName).toBe("TIME");
    expect(countdown).toHaveClass("countdown");
    // A key without a name is shown by its id; a connection not known, by its id.
    const second = rowOf("k-4f1c");
    expect(within(second).getAllByRole("cell").map((c) => c.textContent).slice(0, 3)).toEqual([
      "key-b",
      "anthropic",
      "3",
    ]);
    expect(within(second).getByText(/^(59m 5\ds|1h 00m 00s)$/)).toBeInTheDocument();
    // Oldest first, as the gateway lists them.
    expect(screen.getAllByRole("rowheader").map((h) => h.textContent)).toEqual(["agent", "k-4f1c"]);
  });

  it("releases a lease after confirmation and says so", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<LeasesPage />, liveLeases(two()).handlers);
    await user.click(await screen.findByRole("button", { name: "Release the lease of agent on GLM main" }));
    expect(callsOf(calls, "leases_release")).toHaveLength(0);
    const confirm = screen.getByRole("group", { name: "Release the lease of agent on GLM main" });
    expect(confirm).toHaveTextContent("Its next request is refused.");
    await user.click(within(confirm).getByRole("button", { name: "Release lease" }));
    expect(await screen.findByRole("status")).toHaveTextContent(
      "Released the lease of agent on GLM main. Its next request is refused as stale.",
    );
    expect(callsOf(calls, "leases_release").map((c) => c.args)).toEqual([{ id: 1 }]);
    await waitFor(() => expect(screen.queryByRole("rowheader", { name: "agent" })).not.toBeInTheDocument());
    expect(rowOf("k-4f1c")).toBeInTheDocument();
  });

  it("Cancel keeps the lease", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<LeasesPage />, liveLeases(two()).handlers);
    await user.click(await screen.findByRole("button", { name: "Release the lease of agent on GLM main" }));
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    expect(callsOf(calls, "leases_release")).toHaveLength(0);
    expect(rowOf("agent")).toBeInTheDocument();
  });

  it("says when the lease had already ended, and when the release failed", async () => {
    const user = userEvent.setup();
    const live = liveLeases(two()).handlers;
    renderWithIpc(<LeasesPage />, {
      ...live,
      leases_release: (a) => (a.id === 1 ? live.leases_release({ id: 99 }) : fails("internal_error", "disk full")(a)),
    });
    const release = async (name: string) => {
      await user.click(await screen.findByRole("button", { name }));
      await user.click(screen.getByRole("button", { name: "Release lease" }));
    };
    await release("Release the lease of agent on GLM main");
    expect(await screen.findByText("The lease of agent on GLM main had already ended.")).toHaveClass("notice-ok");
    await release("Release the lease of k-4f1c on key-b");
    expect(await screen.findByText("Could not release the lease of k-4f1c on key-b: disk full")).toHaveClass(
      "notice-error",
    );
  });

  it("refetches on leasesChanged: a lease acquired elsewhere shows up", async () => {
    const live = liveLeases([]);
    const { calls } = renderWithIpc(<LeasesPage />, live.handlers);
    await screen.findByText("No exclusive leases");
    live.set([f.lease({ keyName: "worker" })]);
    await act(async () => {
      // Let the listeners register before emitting.
      await new Promise((r) => setTimeout(r, 10));
      await events.leasesChanged.emit({ at: 1 });
    });
    expect(await screen.findByRole("rowheader", { name: "worker" })).toBeInTheDocument();
    expect(callsOf(calls, "leases_list").length).toBeGreaterThanOrEqual(2);
  });
});

describe("untilFirstLapse", () => {
  it("waits until the first lease has lapsed, at least a second; not at all without leases", () => {
    const now = 1_000_000;
    expect(untilFirstLapse([], now)).toBe(false);
    expect(untilFirstLapse([f.lease({ expiresAt: now + 60_000 }), f.lease({ expiresAt: now + 5_000 })], now)).toBe(
      6_000,
    );
    expect(untilFirstLapse([f.lease({ expiresAt: now - 5_000 })], now)).toBe(1_000);
  });
});

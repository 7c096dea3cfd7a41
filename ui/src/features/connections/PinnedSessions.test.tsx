// Session affinity on the Connections page: each connection's live pinned-session
// count, and the Pinned sessions panel (off, empty, the list, Forget).
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { SessionPinView } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { callsOf, fails, renderWithIpc } from "../../test/harness";
import { ConnectionsPage } from "./ConnectionsPage";

const TEN_MINUTES = 600_000;

const connections = () => [
  f.connection(),
  f.claudeConnection(),
  f.connection({ id: "or-1", provider: "openrouter", name: "OpenRouter" }),
];

const connectionRow = (name: string) =>
  within(screen.getByRole("table", { name: "Connections" }))
    .getByRole("rowheader", { name: new RegExp(name) })
    .closest("tr")!;

/** The panel, once the connections have loaded (it sits under their list). */
const findPanel = () => screen.findByRole("region", { name: "Pinned sessions (live)" });

/** `sessions_list` and `sessions_clear` over one list of pins, as the gateway keeps them. */
function livePins(initial: SessionPinView[], ttlMs = TEN_MINUTES) {
  let pins = [...initial];
  return {
    sessions_list: () => ({ ttlMs, pins }),
    sessions_clear: (a: Record<string, unknown>) => {
      const only = (a.clear as { connection?: string | null }).connection;
      const kept = only == null ? [] : pins.filter((p) => p.connection !== only);
      const removed = pins.length - kept.length;
      pins = kept;
      return { removed };
    },
  };
}

describe("Connections page: session affinity", () => {
  it("shows each connection's live pinned-session count next to its load, nothing when none", async () => {
    let glmPins = 2;
    renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      rate_limits_get: () => f.rateLimits({
        connections: [
          f.flow({ pinnedSessions: glmPins }),
          f.flow({ connectionId: "claude-max", provider: "anthropic", name: "Claude Max", pinnedSessions: 1 }),
          f.flow({ connectionId: "or-1", provider: "openrouter", name: "OpenRouter" }),
        ],
      }),
    });
    await screen.findByRole("table", { name: "Connections" });
    await waitFor(() => expect(connectionRow("GLM main")).toHaveTextContent("0 in flight (no cap)2 sessions pinned"));
    expect(connectionRow("Claude Max")).toHaveTextContent("1 session pinned");
    expect(connectionRow("OpenRouter")).not.toHaveTextContent("pinned");

    // The count rides on the flow poll: a changed count shows without a reload.
    glmPins = 0;
    await waitFor(() => expect(connectionRow("GLM main")).not.toHaveTextContent("pinned"), { timeout: 5_000 });
  });

  it("says affinity is off and where to turn it on when the TTL is 0", async () => {
    renderWithIpc(<ConnectionsPage />, { connections_list: connections });
    const panel = await findPanel();
    const off = await within(panel).findByText("Session affinity is off");
    expect(off.parentElement).toHaveTextContent(/set Session affinity TTL on the Resilience page/);
    expect(within(panel).getByRole("link", { name: "Resilience" })).toHaveAttribute("href", "#/resilience");
    expect(within(panel).queryByRole("button", { name: "Forget all" })).not.toBeInTheDocument();
    expect(within(panel).queryByRole("table")).not.toBeInTheDocument();
  });

  it("says when affinity is on and nothing is pinned yet", async () => {
    renderWithIpc(<ConnectionsPage />, { connections_list: connections, ...livePins([]) });
    const panel = await findPanel();
    expect(await within(panel).findByText("No sessions pinned")).toBeInTheDocument();
    expect(panel).toHaveTextContent("A pin lapses 10 min after the session's last request.");
    expect(within(panel).getByRole("button", { name: "Forget all" })).toBeDisabled();
  });

  it("lists the pins by connection: hash, provider, connection, last seen, expires in", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      ...livePins([
        f.sessionPin({ session: "aaaaaaaaaaa1", lastSeenAt: Date.now() }),
        f.sessionPin({
          session: "bbbbbbbbbbb2",
          provider: "anthropic",
          connection: "claude-max",
          expiresAt: Date.now() + 125_000,
        }),
        f.sessionPin({ session: "ccccccccccc3", connection: "gone-1" }),
        f.sessionPin({ session: "ddddddddddd4" }),
      ]),
    });
    const panel = await findPanel();
    const table = await within(panel).findByRole("table", { name: "Pinned sessions" });
    const row = (hash: string) => within(table).getByRole("rowheader", { name: hash }).closest("tr")!;
    expect(row("aaaaaaaaaaa1")).toHaveTextContent(/^aaaaaaaaaaa1glmGLM mainglm-mainjust now(10m 00s|9m 59s)Forget$/);
    expect(row("bbbbbbbbbbb2")).toHaveTextContent(/^bbbbbbbbbbb2anthropicClaude Maxclaude-max3m ago2m 0[45]sForget$/);
    // A connection deleted since is named by its id.
    expect(row("ccccccccccc3")).toHaveTextContent(/^ccccccccccc3glmgone-13m ago/);
    // Both GLM main pins share one Forget: the gateway forgets a connection's pins together.
    expect(row("ddddddddddd4")).toHaveTextContent(/^ddddddddddd4glmGLM mainglm-main3m ago(10m 00s|9m 59s)$/);
    const forgets = within(table).getAllByRole("button", { name: /^Forget sessions pinned to / });
    expect(forgets.map((b) => b.getAttribute("aria-label"))).toEqual([
      "Forget sessions pinned to GLM main",
      "Forget sessions pinned to Claude Max",
      "Forget sessions pinned to gone-1",
    ]);
  });

  it("Forget clears one connection's pins through sessions_clear; the list refreshes", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      ...livePins([
        f.sessionPin({ session: "aaaaaaaaaaa1" }),
        f.sessionPin({ session: "bbbbbbbbbbb2", provider: "anthropic", connection: "claude-max" }),
        f.sessionPin({ session: "ddddddddddd4" }),
      ]),
    });
    const panel = await findPanel();
    await user.click(await within(panel).findByRole("button", { name: "Forget sessions pinned to GLM main" }));
    expect(
      await within(panel).findByText(/^Forgot 2 pinned sessions on GLM main\. A forgotten session is placed afresh/),
    ).toBeInTheDocument();
    expect(callsOf(calls, "sessions_clear").map((c) => c.args)).toEqual([{ clear: { connection: "glm-main" } }]);
    await waitFor(() =>
      expect(within(panel).queryByRole("rowheader", { name: "aaaaaaaaaaa1" })).not.toBeInTheDocument(),
    );
    expect(within(panel).queryByRole("rowheader", { name: "ddddddddddd4" })).not.toBeInTheDocument();
    expect(within(panel).getByRole("rowheader", { name: "bbbbbbbbbbb2" })).toBeInTheDocument();
  });

  it("Forget all clears every pin", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      ...livePins([f.sessionPin(), f.sessionPin({ session: "bbbbbbbbbbb2", connection: "claude-max" })]),
    });
    const panel = await findPanel();
    await within(panel).findByRole("table", { name: "Pinned sessions" });
    await user.click(within(panel).getByRole("button", { name: "Forget all" }));
    expect(await within(panel).findByText(/^Forgot 2 pinned sessions\. /)).toBeInTheDocument();
    expect(callsOf(calls, "sessions_clear").map((c) => c.args)).toEqual([{ clear: {} }]);
    expect(await within(panel).findByText("No sessions pinned")).toBeInTheDocument();
  });

  it("shows a failed Forget and keeps the pins", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      ...livePins([f.sessionPin()]),
      sessions_clear: fails("internal_error", "affinity table unavailable"),
    });
    const panel = await findPanel();
    await user.click(await within(panel).findByRole("button", { name: "Forget sessions pinned to GLM main" }));
    expect(
      await within(panel).findByText("Could not forget the sessions on GLM main: affinity table unavailable"),
    ).toBeInTheDocument();
    expect(within(panel).getByRole("rowheader", { name: "3f9a0c1d2e4b" })).toBeInTheDocument();
  });

  it("shows why the pins could not be loaded, with Retry", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: connections,
      sessions_list: fails("internal_error", "affinity table unavailable"),
    });
    const panel = await findPanel();
    const alert = await within(panel).findByRole("alert");
    expect(alert).toHaveTextContent("Could not load pinned sessions");
    expect(within(alert).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });
});

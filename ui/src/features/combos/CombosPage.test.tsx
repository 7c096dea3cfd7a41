import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LIVE_FLOW_POLL_MS } from "../../api/sharedQueries";
import { events } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc, versionedCombos } from "../../test/harness";
import { CombosPage } from "./CombosPage";

const glmMain = f.connection();
const glmTwo = f.connection({ id: "glm-2", name: "GLM two", priority: 1 });
const claude = f.claudeConnection({ claudeWall: null });
const connections = () => [glmMain, glmTwo, claude];

const coding = f.combo({
  name: "coding",
  strategy: "round-robin",
  targets: [
    { model: "glm/glm-5", connection: null },
    { model: "claude-sonnet-4-5", connection: "claude-max" },
  ],
  version: 3,
});

const targetRow = (combo: string, n: number) =>
  within(screen.getByRole("table", { name: `Targets of ${combo}` })).getAllByRole("row")[n];

afterEach(() => {
  vi.useRealTimers();
});

describe("CombosPage", () => {
  it("shows a loading state", () => {
    renderWithIpc(<CombosPage />, { combos_list: pending });
    expect(screen.getByText("Loading combos…")).toBeInTheDocument();
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<CombosPage />, { combos_list: fails("internal_error", "store unavailable") });
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Could not load combos");
    expect(alert).toHaveTextContent("store unavailable");
    expect(within(alert).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });

  it("explains the empty list and offers to create a combo", async () => {
    renderWithIpc(<CombosPage />);
    expect(await screen.findByText("No combos yet")).toBeInTheDocument();
    expect(screen.getByText(/that your agents send as the model/)).toHaveTextContent(/connections they run on/);
    expect(screen.getByRole("button", { name: "New combo" })).toBeInTheDocument();
  });

  it("lists each combo's strategy and targets with the live state of the connections they run on", async () => {
    renderWithIpc(<CombosPage />, {
      // glm-2 cools for 125 s more: its derived status says so (the cooldown row too).
      connections_list: () => [
        glmMain,
        {
          ...glmTwo,
          status: f.cooling(125_000),
        },
        claude,
      ],
      combos_list: () => [coding, f.combo({ name: "outer", targets: [{ model: "coding", connection: null }] })],
      cooldowns_list: () => [
        f.cooldown({ lockouts: [f.lockout({ model: "glm-5", expiresAt: Date.now() + 60_000 })] }),
        f.cooldown({ connection: "glm-2", status: "unavailable", rateLimitedUntil: Date.now() + 125_000 }),
        f.cooldown({ connection: "claude-max", provider: "anthropic" }),
      ],
      rate_limits_get: () => f.rateLimits({
        connections: [
          f.flow({
            inFlight: 1,
            queued: 2,
            gate: { cap: 1, inFlight: 1, queued: 2 },
            models: [{ model: "glm-5", gate: { cap: 3, inFlight: 1, queued: 0 } }],
          }),
          f.flow({ connectionId: "glm-2", name: "GLM two" }),
          f.flow({ connectionId: "claude-max", provider: "anthropic", name: "Claude Max" }),
        ],
      }),
    });
    const card = await screen.findByRole("region", { name: "coding" });
    expect(within(card).getByText("Round robin")).toBeInTheDocument();
    expect(card).toHaveTextContent(/Each request starts one target further along the list/);

    const glm = targetRow("coding", 1);
    expect(within(glm).getByRole("rowheader")).toHaveTextContent("glm/glm-5");
    expect(within(glm).getByText("any")).toBeInTheDocument();
    const [main, two] = [...glm.querySelectorAll<HTMLElement>(".run-list > li")];
    await waitFor(() => expect(main).toHaveTextContent("1 in flight (cap 1)"));
    expect(main).toHaveTextContent("GLM main");
    expect(main).toHaveTextContent("2 queued");
    expect(main).toHaveTextContent("glm-5: 1 in flight (cap 3), 0 queued");
    expect(within(main).getByText("At cap")).toBeInTheDocument();
    expect(within(main).getByText("Model locked")).toBeInTheDocument();
    expect(two).toHaveTextContent("GLM two");
    expect(within(two).getByText("Cooling")).toBeInTheDocument();
    expect(within(two).getByText("Cooling")).toHaveAttribute("title", expect.stringContaining("rate limited"));
    expect(two).toHaveTextContent(/ends in 2m 0[45]s/);
    expect(two).toHaveTextContent("0 in flight (no cap)");

    const pinned = targetRow("coding", 2);
    expect(pinned).toHaveTextContent("Claude Max");
    expect(within(pinned).getAllByText("Claude Max")).toHaveLength(2); // pinned to, and runs on
    expect(within(pinned).getByText("Active")).toBeInTheDocument();
    // GLM speaks OpenAI, Claude Anthropic: a request only runs on its own format's connections.
    expect(card).toHaveTextContent(/This combo mixes API formats/);
    expect(pinned).toHaveTextContent("anthropic format");

    // A combo target: that combo's targets take its place.
    const nested = targetRow("outer", 1);
    expect(within(nested).getByText("combo")).toBeInTheDocument();
    expect(nested).toHaveTextContent(/GLM main.*GLM two.*Claude Max/);
  });

  it("says when a target runs nowhere", async () => {
    renderWithIpc(<CombosPage />, {
      connections_list: connections,
      combos_list: () => [
        f.combo({
          targets: [
            { model: "mistral/large", connection: null },
            { model: "glm/glm-5", connection: "claude-max" },
          ],
        }),
      ],
    });
    await screen.findByRole("region", { name: "coding" });
    expect(targetRow("coding", 1)).toHaveTextContent("Runs nowhere now: no connection serves this name.");
    expect(targetRow("coding", 2)).toHaveTextContent("Runs nowhere: the pinned connection is not a connection of glm.");
  });

  it("refreshes combos on the routing change event", async () => {
    let combosRead = 0;
    const { calls } = renderWithIpc(<CombosPage />, {
      connections_list: connections,
      combos_list: () => (++combosRead === 1 ? [coding] : [coding, f.combo({ name: "later" })]),
    });
    await screen.findByRole("region", { name: "coding" });
    await waitFor(() => expect(callsOf(calls, "rate_limits_get")).toHaveLength(1));
    // A routing change (combos, connections) is announced as connectionsChanged.
    await act(async () => {
      await new Promise((r) => setTimeout(r, 10));
      await events.connectionsChanged.emit({ at: 1 });
    });
    expect(await screen.findByRole("region", { name: "later" })).toBeInTheDocument();
    expect(callsOf(calls, "rate_limits_get").length).toBeGreaterThanOrEqual(2);
  });

  it("polls the live load while shown", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    let inFlight = 0;
    renderWithIpc(<CombosPage />, {
      connections_list: connections,
      combos_list: () => [coding],
      rate_limits_get: () => f.rateLimits({ connections: [f.flow({ inFlight: inFlight++ })] }),
    });
    await screen.findByRole("region", { name: "coding" });
    await waitFor(() => expect(targetRow("coding", 1)).toHaveTextContent("0 in flight"));
    await act(() => vi.advanceTimersByTimeAsync(LIVE_FLOW_POLL_MS));
    await waitFor(() => expect(targetRow("coding", 1)).toHaveTextContent("1 in flight"));
  });

  it("creates a round-robin combo: strategy explained, targets added, pinned, reordered and removed", async () => {
    const user = userEvent.setup();
    const combos = versionedCombos([]);
    const { calls } = renderWithIpc(<CombosPage />, { connections_list: connections, ...combos.handlers });
    await user.click(await screen.findByRole("button", { name: "New combo" }));
    const form = screen.getByRole("region", { name: "New combo" });
    await user.type(within(form).getByLabelText(/^Name/), "spread");
    const strategy = within(form).getByLabelText("Strategy");
    expect(strategy).toHaveAccessibleDescription(/first healthy target takes every request/);
    await user.selectOptions(strategy, "round-robin");
    expect(strategy).toHaveAccessibleDescription(/one target further along the list than the last/);
    expect(within(form).getByText("No targets yet")).toBeInTheDocument();

    for (const [n, model] of [
      [1, "glm/glm-5"],
      [2, "glm-5"],
      [3, "anthropic/claude-sonnet-4-5"],
    ] as const) {
      await user.click(within(form).getByRole("button", { name: "Add target" }));
      const input = within(form).getByLabelText(`Model of target ${n}`);
      expect(input).toHaveFocus();
      await user.type(input, model);
    }
    // The model field says what the target runs on, and offers the routable names.
    expect(within(form).getByLabelText("Model of target 1")).toHaveAccessibleDescription(
      "Sends glm-5 to GLM main, GLM two.",
    );
    const names = [...document.querySelectorAll("#combo-routable-names option")].map((o) => o.getAttribute("value"));
    expect(names.sort()).toEqual(["glm-5", "glm/glm-5"]);
    const pin = within(form).getByLabelText("Pinned connection of target 1");
    expect([...(pin as HTMLSelectElement).options].map((o) => o.text)).toEqual([
      "Any connection",
      "GLM main (glm)",
      "GLM two (glm)",
    ]);
    await user.selectOptions(pin, "glm-2");
    expect(within(form).getByLabelText("Model of target 1")).toHaveAccessibleDescription("Sends glm-5 to GLM two.");
    expect(within(form).queryByLabelText(/^Weight/)).not.toBeInTheDocument();

    await user.click(within(form).getByRole("button", { name: "Move target 3 up" }));
    expect(within(form).getByLabelText("Model of target 2")).toHaveValue("anthropic/claude-sonnet-4-5");
    await user.click(within(form).getByRole("button", { name: "Remove target 3" }));
    expect(within(form).queryByLabelText("Model of target 3")).not.toBeInTheDocument();

    await user.click(within(form).getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Created spread.")).toBeInTheDocument();
    expect(callsOf(calls, "combos_put")[0].args).toEqual({
      combo: {
        name: "spread",
        strategy: "round-robin",
        targets: [
          { model: "glm/glm-5", connection: "glm-2" },
          { model: "anthropic/claude-sonnet-4-5", connection: null },
        ],
      },
      expectedVersion: 0,
    });
    const card = await screen.findByRole("region", { name: "spread" });
    expect(within(card).getByText("Round robin")).toBeInTheDocument();
    expect(targetRow("spread", 1)).toHaveTextContent("GLM two");
  });

  it("shows weights only for the weighted strategy and sends them", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CombosPage />, {
      connections_list: connections,
      combos_list: () => [coding],
      combos_put: (a) => ({ ...(a.combo as object), version: 4 }),
    });
    await user.click(await screen.findByRole("button", { name: "Edit combo coding" }));
    const form = screen.getByRole("region", { name: "Edit combo coding" });
    expect(within(form).queryByLabelText("Weight of target 1")).not.toBeInTheDocument();
    await user.selectOptions(within(form).getByLabelText("Strategy"), "weighted");
    const weight = within(form).getByLabelText("Weight of target 1");
    expect(weight).toHaveAccessibleDescription(/0–1,000/);
    await user.type(weight, "3");
    await user.click(within(form).getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Saved coding.")).toBeInTheDocument();
    expect(callsOf(calls, "combos_put")[0].args).toEqual({
      combo: {
        name: "coding",
        strategy: "weighted",
        targets: [
          { model: "glm/glm-5", connection: null, weight: 3 },
          { model: "claude-sonnet-4-5", connection: "claude-max" },
        ],
      },
      expectedVersion: 3,
    });
  });

  it("does not pin a target that is another combo", async () => {
    const user = userEvent.setup();
    renderWithIpc(<CombosPage />, { connections_list: connections, combos_list: () => [coding] });
    await user.click(await screen.findByRole("button", { name: "New combo" }));
    const form = screen.getByRole("region", { name: "New combo" });
    await user.type(within(form).getByLabelText(/^Name/), "outer");
    await user.click(within(form).getByRole("button", { name: "Add target" }));
    await user.type(within(form).getByLabelText("Model of target 1"), "coding");
    expect(within(form).getByLabelText("Pinned connection of target 1")).toBeDisabled();
    expect(within(form).getByLabelText("Model of target 1")).toHaveAccessibleDescription(
      /Combo: its targets take this place \(runs on GLM main, GLM two, Claude Max\)/,
    );
    const names = [...document.querySelectorAll("#combo-routable-names option")].map((o) => o.getAttribute("value"));
    expect(names[0]).toBe("coding");
  });

  it("checks the form before sending, and puts the gateway's issues on the fields they name", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CombosPage />, {
      connections_list: connections,
      combos_list: () => [coding],
      combos_put: fails("validation_failed", "1 invalid field", [
        { path: "/targets/1/model", message: "'loop' leads back to combo 'fresh': combos may not form a cycle" },
        { path: "/strategy", message: "unknown variant" },
      ]),
    });
    await user.click(await screen.findByRole("button", { name: "New combo" }));
    const form = screen.getByRole("region", { name: "New combo" });
    await user.click(within(form).getByRole("button", { name: "Save" }));
    expect(within(form).getByLabelText(/^Name/)).toHaveAccessibleDescription(/Enter the name clients will send/);
    expect(within(form).getByRole("button", { name: "Add target" })).toHaveAccessibleDescription(
      /Add at least one target/,
    );
    await user.type(within(form).getByLabelText(/^Name/), "coding");
    await user.click(within(form).getByRole("button", { name: "Add target" }));
    await user.click(within(form).getByRole("button", { name: "Save" }));
    expect(within(form).getByLabelText(/^Name/)).toHaveAccessibleDescription(/A combo named coding already exists/);
    expect(within(form).getByLabelText("Model of target 1")).toHaveAccessibleDescription(/Enter a model/);
    expect(callsOf(calls, "combos_put")).toHaveLength(0);

    await user.clear(within(form).getByLabelText(/^Name/));
    await user.type(within(form).getByLabelText(/^Name/), "fresh");
    await user.type(within(form).getByLabelText("Model of target 1"), "glm-5");
    await user.click(within(form).getByRole("button", { name: "Add target" }));
    await user.type(within(form).getByLabelText("Model of target 2"), "loop");
    await user.click(within(form).getByRole("button", { name: "Save" }));
    await waitFor(() =>
      expect(within(form).getByLabelText("Model of target 2")).toHaveAccessibleDescription(/may not form a cycle/),
    );
    expect(within(form).getByLabelText("Strategy")).toHaveAccessibleDescription(/unknown variant/);
    expect(within(form).getByLabelText("Model of target 2")).toHaveValue("loop");
  });

  it("an edit refused as stale says Changed elsewhere; Reload keeps the edit over the current combo", async () => {
    const user = userEvent.setup();
    const combos = versionedCombos([coding]);
    const { calls } = renderWithIpc(<CombosPage />, { connections_list: connections, ...combos.handlers });
    await user.click(await screen.findByRole("button", { name: "Edit combo coding" }));
    const form = screen.getByRole("region", { name: "Edit combo coding" });
    await user.selectOptions(within(form).getByLabelText("Strategy"), "least-used");
    combos.changeElsewhere("coding", { strategy: "p2c" });
    await user.click(within(form).getByRole("button", { name: "Save" }));

    const alert = await within(form).findByRole("alert");
    expect(alert).toHaveTextContent("Changed elsewhere — reload");
    expect(alert).toHaveTextContent(/This combo changed somewhere else/);
    expect(combos.get("coding")?.strategy).toBe("p2c");

    await user.click(within(alert).getByRole("button", { name: "Reload Edit combo coding" }));
    expect(await within(form).findByText(/Reloaded the current values\. Your edits are kept/)).toBeInTheDocument();
    expect(within(form).getByLabelText("Strategy")).toHaveValue("least-used");
    await user.click(within(form).getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Saved coding.")).toBeInTheDocument();
    expect(callsOf(calls, "combos_put").map((c) => c.args.expectedVersion)).toEqual([3, 4]);
    expect(combos.get("coding")).toMatchObject({ strategy: "least-used", version: 5 });
  });

  it("deletes a combo after confirmation; a combo another targets is refused with the gateway's reason", async () => {
    const user = userEvent.setup();
    const combos = versionedCombos([coding, f.combo({ name: "outer", targets: [{ model: "coding", connection: null }] })]);
    const { calls } = renderWithIpc(<CombosPage />, { connections_list: connections, ...combos.handlers });
    await user.click(await screen.findByRole("button", { name: "Delete combo coding" }));
    expect(screen.getByRole("group", { name: "Delete combo coding" })).toHaveTextContent(
      /is a target of outer; remove it there first/,
    );
    await user.click(screen.getByRole("button", { name: "Delete combo" }));
    expect(
      await screen.findByText(/coding was not deleted: combo 'coding' is a target of combo\(s\) outer/),
    ).toBeInTheDocument();
    expect(combos.get("coding")).toBeDefined();

    await user.click(screen.getByRole("button", { name: "Delete combo outer" }));
    await user.click(screen.getByRole("button", { name: "Delete combo" }));
    expect(await screen.findByText("Deleted outer.")).toBeInTheDocument();
    expect(callsOf(calls, "combos_delete").map((c) => c.args)).toEqual([
      { name: "coding", expectedVersion: 3 },
      { name: "outer", expectedVersion: 1 },
    ]);
    await waitFor(() => expect(screen.queryByRole("region", { name: "outer" })).not.toBeInTheDocument());
  });

  it("a delete refused as stale says Changed elsewhere; Reload refetches the list", async () => {
    const user = userEvent.setup();
    const combos = versionedCombos([coding]);
    const { calls } = renderWithIpc(<CombosPage />, { connections_list: connections, ...combos.handlers });
    await screen.findByRole("region", { name: "coding" });
    combos.changeElsewhere("coding", { strategy: "random" });
    await user.click(screen.getByRole("button", { name: "Delete combo coding" }));
    await user.click(screen.getByRole("button", { name: "Delete combo" }));
    expect(await screen.findByText(/Changed elsewhere — reload: coding changed somewhere else/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Reload combos" }));
    expect(await screen.findByText("Reloaded the combos. Nothing was deleted.")).toBeInTheDocument();
    expect(within(screen.getByRole("region", { name: "coding" })).getByText("Random")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Delete combo coding" }));
    await user.click(screen.getByRole("button", { name: "Delete combo" }));
    expect(await screen.findByText("Deleted coding.")).toBeInTheDocument();
    expect(callsOf(calls, "combos_delete").map((c) => c.args.expectedVersion)).toEqual([3, 4]);
  });
});

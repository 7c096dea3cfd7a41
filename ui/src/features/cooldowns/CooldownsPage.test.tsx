import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc } from "../../test/harness";
import { CooldownsPage } from "./CooldownsPage";

function byPath(path: string): HTMLInputElement {
  const el = document.querySelector<HTMLInputElement>(`[data-path="${path}"]`);
  if (!el) throw new Error(`no field ${path}`);
  return el;
}

const rows = () => [
  f.cooldown({
    status: "unavailable",
    rateLimitedUntil: Date.now() + 30_000,
    remainingMs: 30_000,
    backoffLevel: 2,
    lastErrorKind: "rate_limit",
    errorCode: 429,
    lastError: "Rate limit reached for requests",
  }),
  f.cooldown({ connection: "glm-backup", status: "unavailable", rateLimitedUntil: Date.now() + 60_000 }),
  f.cooldown({
    connection: "or-1",
    provider: "openrouter",
    status: "banned",
    lastErrorKind: "banned",
    lastError: "account deactivated",
  }),
  f.cooldown({ connection: "claude-max", provider: "anthropic", lockouts: [f.lockout({ connection: "claude-max", model: "claude-opus" })] }),
  f.cooldown({ connection: "healthy", provider: "anthropic" }),
];

/** The connections of `rows()`, each with the status the gateway derives for it. */
const connections = () => [
  f.connection({
    status: f.cooling(30_000),
  }),
  f.connection({
    id: "glm-backup",
    name: "GLM backup",
    status: f.cooling(60_000, { detail: "Cooling down: an upstream failure." }),
  }),
  f.connection({
    id: "or-1",
    provider: "openrouter",
    name: "OpenRouter",
    status: f.routability({
      state: "terminal",
      routable: false,
      label: "Banned",
      detail: "Out of rotation until you act: the upstream deactivated the account.",
    }),
  }),
  f.claudeConnection({
    status: f.routability({
      state: "models-locked",
      label: "Models locked",
      detail: "Routes, except these models, locked out for a while: claude-opus.",
      lockedModels: ["claude-opus"],
    }),
  }),
  f.connection({ id: "healthy", provider: "anthropic", name: "Healthy" }),
];

const rowOf = (connection: string) => screen.getByRole("rowheader", { name: connection }).closest("tr")!;

describe("CooldownsPage", () => {
  it("shows loading states", () => {
    renderWithIpc(<CooldownsPage />, { cooldowns_list: pending, resilience_get: pending });
    expect(screen.getByText("Loading cooldowns…")).toBeInTheDocument();
    expect(screen.getByText("Loading cooldown settings…")).toBeInTheDocument();
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<CooldownsPage />, { cooldowns_list: fails("internal_error", "engine unavailable") });
    const box = (await screen.findByText("Could not load cooldowns")).closest("[role=alert]") as HTMLElement;
    expect(box).toHaveTextContent("engine unavailable");
    expect(within(box).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });

  it("explains the empty state when everything is in rotation", async () => {
    renderWithIpc(<CooldownsPage />, {
      cooldowns_list: () => [f.cooldown()],
      // Switched off by the user is not "out of rotation" (as for the gateway's count).
      connections_list: () => [
        f.connection(),
        f.connection({
          id: "off",
          enabled: false,
          status: f.routability({ state: "disabled", routable: false, label: "Disabled", detail: "Switched off: never routed to." }),
        }),
      ],
    });
    expect(await screen.findByText("Every connection is in rotation")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Clear all" })).toBeDisabled();
  });

  it("lists a connection whose provider's breaker is open: it is not in rotation, and Clear does not undo it", async () => {
    renderWithIpc(<CooldownsPage />, {
      cooldowns_list: () => [f.cooldown()],
      connections_list: () => [f.connection({ status: f.breakerOpen() }), f.connection({ id: "healthy", name: "Healthy" })],
    });
    const row = await screen.findByRole("rowheader", { name: "glm-main" }).then((h) => h.closest("tr")!);
    expect(screen.queryByText("Every connection is in rotation")).not.toBeInTheDocument();
    expect(within(row).getByText("Breaker open")).toHaveClass("badge-danger");
    expect(within(row).getByText(/^(59|60|1m 00)s$/)).toBeInTheDocument();
    expect(row).toHaveTextContent("Provider 'glm' failed 2 times in a row (the upstream failed (5xx))");
    expect(within(row).queryByRole("button", { name: /Clear/ })).not.toBeInTheDocument();
    expect(within(row).getByRole("link", { name: "Breaker: Resilience" })).toHaveAttribute("href", "#/resilience");
    expect(screen.queryByRole("rowheader", { name: "healthy" })).not.toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Clear all" })).toBeDisabled();
  });

  it("does not claim every connection is in rotation when the statuses cannot be loaded", async () => {
    renderWithIpc(<CooldownsPage />, {
      cooldowns_list: () => [f.cooldown()],
      connections_list: fails("internal_error", "store unavailable"),
    });
    expect(await screen.findByText("No connection is cooling down")).toBeInTheDocument();
    expect(screen.getByRole("alert")).toHaveTextContent("Connection statuses are unavailable (store unavailable)");
    expect(screen.queryByText("Every connection is in rotation")).not.toBeInTheDocument();
  });

  it("lists cooling, locked-out and terminal connections; terminal ones are not clearable", async () => {
    const user = userEvent.setup();
    renderWithIpc(<CooldownsPage />, { cooldowns_list: rows, connections_list: connections });
    await screen.findByRole("table", { name: "Connections taken out of routing" });
    const glm = rowOf("glm-main");
    expect(within(glm).getByText("Cooling")).toBeInTheDocument();
    expect(within(glm).getByText(/^(29|30)s$/)).toBeInTheDocument();
    // The reason in words; the raw upstream text only on demand.
    expect(glm).toHaveTextContent("Cooling down: rate limited by the upstream (HTTP 429).");
    expect(glm).toHaveTextContent("Backoff level 2");
    const raw = within(glm).getByText("Raw upstream answer");
    expect(within(glm).getByText("Rate limit reached for requests")).not.toBeVisible();
    await user.click(raw);
    expect(within(glm).getByText("Rate limit reached for requests")).toBeVisible();
    expect(within(glm).getByRole("checkbox", { name: "Select glm-main" })).toBeInTheDocument();
    const banned = rowOf("or-1");
    expect(within(banned).getByText("Banned")).toHaveClass("badge-danger");
    expect(within(banned).queryByRole("checkbox")).not.toBeInTheDocument();
    expect(within(banned).queryByRole("button")).not.toBeInTheDocument();
    expect(banned).toHaveTextContent("Not cleared here");
    expect(rowOf("claude-max")).toHaveTextContent("claude-opus");
    expect(within(rowOf("claude-max")).getByText("Models locked")).toBeInTheDocument();
    expect(screen.queryByRole("rowheader", { name: "healthy" })).not.toBeInTheDocument();
  });

  it("names the last error in words under a status that does not say it", async () => {
    renderWithIpc(<CooldownsPage />, {
      cooldowns_list: () => [
        f.cooldown({
          status: "unavailable",
          rateLimitedUntil: Date.now() + 30_000,
          lastErrorKind: "server_error",
          errorCode: 503,
          lastError: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        }),
      ],
      connections_list: () => [f.connection({ status: f.breakerOpen() })],
    });
    const row = await screen.findByRole("rowheader", { name: "glm-main" }).then((h) => h.closest("tr")!);
    expect(row).toHaveTextContent("Last error: the upstream failed (5xx) (HTTP 503).");
    expect(within(row).getByRole("button", { name: "Clear cooldown of glm-main" })).toBeInTheDocument();
  });

  it("clears one connection and shows the result", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CooldownsPage />, {
      cooldowns_list: rows,
      cooldowns_clear: () => ({ cleared: 1, unchanged: 0, skippedTerminal: 0, lockoutsCleared: 2 }),
    });
    await user.click(await screen.findByRole("button", { name: "Clear cooldown of glm-main" }));
    const status = await screen.findByText("Cleared 1, unchanged 0, skipped terminal 0, lockouts cleared 2.");
    expect(status).toHaveAttribute("role", "status");
    expect(callsOf(calls, "cooldowns_clear")[0].args).toEqual({
      request: { connectionIds: ["glm-main"], all: false, provider: null },
    });
  });

  it("clears the selection", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CooldownsPage />, {
      cooldowns_list: rows,
      cooldowns_clear: () => ({ cleared: 2, unchanged: 0, skippedTerminal: 0, lockoutsCleared: 0 }),
    });
    await user.click(await screen.findByRole("checkbox", { name: "Select glm-main" }));
    await user.click(screen.getByRole("checkbox", { name: "Select claude-max" }));
    await user.click(screen.getByRole("button", { name: "Clear selected (2)" }));
    await waitFor(() =>
      expect(callsOf(calls, "cooldowns_clear")[0]?.args).toEqual({
        request: { connectionIds: ["glm-main", "claude-max"], all: false, provider: null },
      }),
    );
  });

  it("filters by provider and clears all of that provider", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CooldownsPage />, {
      cooldowns_list: rows,
      cooldowns_clear: () => ({ cleared: 2, unchanged: 0, skippedTerminal: 0, lockoutsCleared: 0 }),
    });
    await user.selectOptions(await screen.findByLabelText("Provider"), "glm");
    expect(screen.queryByRole("rowheader", { name: "or-1" })).not.toBeInTheDocument();
    expect(screen.getByRole("rowheader", { name: "glm-backup" })).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Clear all of glm" }));
    await waitFor(() =>
      expect(callsOf(calls, "cooldowns_clear")[0]?.args).toEqual({
        request: { connectionIds: [], all: true, provider: "glm" },
      }),
    );
    expect(await screen.findByText(/Cleared 2, unchanged 0/)).toBeInTheDocument();
  });

  it("edits the cooldown settings with ranges, and maps validation issues", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<CooldownsPage />, {
      resilience_patch: fails("validation_failed", "1 invalid field", [
        { path: "/connectionCooldown/oauth/baseCooldownMs", message: "must be a whole number from 0 to 600,000 ms" },
      ]),
    });
    await screen.findByRole("region", { name: "Cooldown settings" });
    const base = byPath("/connectionCooldown/oauth/baseCooldownMs");
    expect(base).toHaveValue(5000);
    await waitFor(() => expect(base).toHaveAccessibleDescription(/0–600,000 ms/));
    expect(screen.getByRole("switch", { name: "Cool down after a stream stall" })).not.toBeChecked();
    await user.click(screen.getByRole("switch", { name: "Cool down after a stream stall" }));
    await user.clear(base);
    await user.type(base, "900000");
    await user.click(screen.getByRole("button", { name: "Save Cooldown settings" }));
    await waitFor(() => expect(base).toHaveAccessibleDescription(/a whole number from 0 to 600,000 ms/));
    expect(base).toHaveValue(900000);
    const patch = callsOf(calls, "resilience_patch")[0].args.patch as Record<string, unknown>;
    expect(callsOf(calls, "resilience_patch")[0].args.expectedVersion).toBe(1);
    expect(patch.streamStallCooldown).toEqual({ enabled: true });
    expect(patch.connectionCooldown).toEqual({
      oauth: { baseCooldownMs: 900_000, maxBackoffSteps: 8 },
      apikey: { baseCooldownMs: 3_000, maxBackoffSteps: 5 },
    });
  });
});

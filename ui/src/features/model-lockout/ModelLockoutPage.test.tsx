import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc, versionedSettings } from "../../test/harness";
import { ModelLockoutPage } from "./ModelLockoutPage";

function byPath(path: string): HTMLInputElement {
  const el = document.querySelector<HTMLInputElement>(`[data-path="${path}"]`);
  if (!el) throw new Error(`no field ${path}`);
  return el;
}

describe("ModelLockoutPage", () => {
  it("shows loading states", () => {
    renderWithIpc(<ModelLockoutPage />, { model_lockout_get: pending, lockouts_list: pending });
    expect(screen.getByText("Loading model lockout settings…")).toBeInTheDocument();
    expect(screen.getByText("Loading active lockouts…")).toBeInTheDocument();
  });

  it("shows errors with Retry", async () => {
    renderWithIpc(<ModelLockoutPage />, {
      model_lockout_get: fails("internal_error", "settings unavailable"),
      lockouts_list: fails("internal_error", "engine unavailable"),
    });
    const alerts = await screen.findAllByRole("alert");
    expect(alerts.map((a) => a.textContent).join(" ")).toMatch(/settings unavailable.*engine unavailable/);
    expect(screen.getAllByRole("button", { name: "Retry" })).toHaveLength(2);
  });

  it("explains the empty lockout table, and that lockout is off", async () => {
    renderWithIpc(<ModelLockoutPage />);
    expect(await screen.findByText("No active model lockouts")).toBeInTheDocument();
    expect(await screen.findByText(/Model lockout is currently off/)).toBeInTheDocument();
  });

  it("shows the settings with ranges and the active lockouts with live countdowns", async () => {
    renderWithIpc(<ModelLockoutPage />, {
      lockouts_list: () => [
        f.lockout({ scope: "quota_family", reason: "quota_exhausted", model: "claude-opus", connection: "claude-max", provider: "anthropic" }),
        f.lockout({ expiresAt: Date.now() + 90_000, failureCount: 3 }),
      ],
    });
    const table = await screen.findByRole("table", { name: "Active model lockouts" });
    const row = within(table).getByRole("rowheader", { name: "glm-5" }).closest("tr")!;
    expect(within(row).getByText(/^1m (29|30)s$/)).toBeInTheDocument();
    expect(row).toHaveTextContent("server error");
    expect(row).toHaveTextContent("exact");
    expect(within(table).getByText("quota family")).toBeInTheDocument();
    expect(byPath("/modelLockout/errorCodes")).toHaveValue("403, 404, 429, 502, 503, 504");
    await waitFor(() => expect(byPath("/modelLockout/baseCooldownMs")).toHaveAccessibleDescription(/5,000–600,000 ms/));
    expect(byPath("/modelLockout/errorCodes")).toHaveAccessibleDescription(/1–32 items.*Each 100–599/);
    expect(screen.getByRole("switch", { name: "Enabled" })).not.toBeChecked();
    expect(screen.getByRole("switch", { name: "Exponential backoff" })).toBeChecked();
  });

  it("re-enables one model with its provider, connection and model", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ModelLockoutPage />, {
      lockouts_list: () => [f.lockout()],
      lockouts_clear: () => ({ cleared: 1 }),
    });
    await user.click(await screen.findByRole("button", { name: "Re-enable glm-5 on glm-main" }));
    expect(await screen.findByText("Re-enabled glm-5 on glm-main.")).toBeInTheDocument();
    expect(callsOf(calls, "lockouts_clear")[0].args).toEqual({
      request: { provider: "glm", connection: "glm-main", model: "glm-5" },
    });
  });

  it("saves the settings through model_lockout_patch with the version it loaded", async () => {
    const user = userEvent.setup();
    const store = versionedSettings(f.resilienceSettings({}, 4));
    const { calls } = renderWithIpc(<ModelLockoutPage />, store.handlers);
    await user.click(await screen.findByRole("switch", { name: "Enabled" }));
    const codes = byPath("/modelLockout/errorCodes");
    await user.clear(codes);
    await user.type(codes, "429, 503");
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    await waitFor(() => expect(callsOf(calls, "model_lockout_patch")).toHaveLength(1));
    expect(callsOf(calls, "model_lockout_patch")[0].args).toEqual({
      patch: {
        enabled: true,
        errorCodes: [429, 503],
        baseCooldownMs: 120_000,
        maxCooldownMs: 1_800_000,
        maxBackoffSteps: 10,
        useExponentialBackoff: true,
      },
      expectedVersion: 4,
    });
    expect(await screen.findByText("Saved.")).toBeInTheDocument();
    // The next save names the version the gateway returned.
    await user.click(screen.getByRole("switch", { name: "Exponential backoff" }));
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    await waitFor(() => expect(callsOf(calls, "model_lockout_patch")).toHaveLength(2));
    expect(callsOf(calls, "model_lockout_patch")[1].args.expectedVersion).toBe(5);
    expect(store.doc).toMatchObject({ version: 6, modelLockout: { enabled: true, useExponentialBackoff: false } });
  });

  it("a save refused as stale says Changed elsewhere; Reload keeps the edit over the current settings", async () => {
    const user = userEvent.setup();
    const store = versionedSettings(f.resilienceSettings({}, 2));
    const { calls } = renderWithIpc(<ModelLockoutPage />, store.handlers);
    const enabled = await screen.findByRole("switch", { name: "Enabled" });
    // Another client (the Resilience page in another window, a script) saves first.
    store.changeElsewhere({ modelLockout: { ...store.doc.modelLockout, baseCooldownMs: 60_000 } });
    await user.click(enabled);
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Changed elsewhere — reload");
    expect(store.doc.modelLockout).toMatchObject({ enabled: false, baseCooldownMs: 60_000 });

    await user.click(within(alert).getByRole("button", { name: "Reload Model lockout settings" }));
    expect(await screen.findByText(/Your edits are kept on top of them/)).toBeInTheDocument();
    expect(callsOf(calls, "model_lockout_get")).toHaveLength(2);
    expect(byPath("/modelLockout/baseCooldownMs")).toHaveValue(60_000);
    expect(enabled).toBeChecked();
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    expect(await screen.findByText("Saved.")).toBeInTheDocument();
    expect(callsOf(calls, "model_lockout_patch").map((c) => c.args.expectedVersion)).toEqual([2, 3]);
    expect(callsOf(calls, "model_lockout_patch")[1].args.patch).not.toHaveProperty("version");
    expect(store.doc.modelLockout).toMatchObject({ enabled: true, baseCooldownMs: 60_000 });
  });

  it("maps validation issues onto the lockout fields", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ModelLockoutPage />, {
      model_lockout_patch: fails("validation_failed", "2 invalid fields", [
        { path: "/modelLockout/maxCooldownMs", message: "must be ≥ baseCooldownMs (120000)" },
        { path: "/modelLockout/errorCodes/1", message: "must be a whole number from 100 to 599" },
      ]),
    });
    const max = await screen.findByLabelText("Max cooldown (ms)");
    await user.clear(max);
    await user.type(max, "60000");
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    await waitFor(() => expect(max).toHaveAccessibleDescription(/must be ≥ baseCooldownMs/));
    expect(max).toHaveValue(60000);
    expect(byPath("/modelLockout/errorCodes")).toHaveAccessibleDescription(/a whole number from 100 to 599/);
    expect(byPath("/modelLockout/baseCooldownMs")).not.toHaveAttribute("aria-invalid");
  });

  it("blocks text that is not a list of status codes before sending", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ModelLockoutPage />);
    const codes = await waitFor(() => byPath("/modelLockout/errorCodes"));
    await user.clear(codes);
    await user.type(codes, "429, five hundred");
    await user.click(screen.getByRole("button", { name: "Save Model lockout settings" }));
    expect(codes).toHaveAccessibleDescription(/whole numbers separated by commas/);
    expect(callsOf(calls, "model_lockout_patch")).toHaveLength(0);
  });
});

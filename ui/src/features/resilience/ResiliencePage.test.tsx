import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { queryKeys } from "../../api/queryKeys";
import type { ProviderErrorRule } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc, versionedSettings, type Call } from "../../test/harness";
import { ResiliencePage } from "./ResiliencePage";

function byPath(path: string): HTMLInputElement {
  const el = document.querySelector<HTMLInputElement>(`[data-path="${path}"]`);
  if (!el) throw new Error(`no field ${path}`);
  return el;
}

const card = (title: string) => screen.getByRole("region", { name: title });

describe("ResiliencePage", () => {
  it("shows a loading state", () => {
    renderWithIpc(<ResiliencePage />, { resilience_get: pending, breakers_list: pending });
    expect(screen.getByText("Loading resilience settings…")).toBeInTheDocument();
    expect(screen.getByText("Loading breaker states…")).toBeInTheDocument();
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<ResiliencePage />, { resilience_get: fails("internal_error", "settings table unreadable") });
    const alert = await screen.findByText("Could not load resilience settings");
    const box = alert.closest("[role=alert]") as HTMLElement;
    expect(box).toHaveTextContent("settings table unreadable");
    expect(within(box).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });

  it("explains the empty breaker list", async () => {
    renderWithIpc(<ResiliencePage />);
    expect(await screen.findByText("No provider breakers yet")).toBeInTheDocument();
  });

  it("shows every group with values, labels and allowed ranges", async () => {
    renderWithIpc(<ResiliencePage />);
    await screen.findByRole("region", { name: "Provider circuit breaker" });
    const reset = byPath("/providerBreaker/oauth/resetTimeoutMs");
    expect(reset).toHaveValue(60000);
    expect(reset).toHaveAccessibleName("Reset timeout (ms)");
    await waitFor(() => expect(reset).toHaveAccessibleDescription(/1,000–86,400,000 ms/));
    expect(byPath("/connectionCooldown/apikey/maxBackoffSteps")).toHaveAccessibleDescription(/^0–16/);
    expect(byPath("/sessionAffinityTtlMs")).toHaveAccessibleName("Session affinity TTL (ms)");
    expect(byPath("/providerBreaker/apikey/cooldownByKind/timeout")).toHaveValue(null);
    const readiness = byPath("/streamRecovery/readinessBudgetMs");
    expect(readiness).toHaveValue(60000);
    expect(readiness).toHaveAccessibleName("Readiness budget (ms)");
    expect(readiness).toHaveAccessibleDescription(/^1,000–600,000 ms/);
    const deadline = byPath("/streamRecovery/attemptDeadlineMs");
    expect(deadline).toHaveValue(1800000);
    expect(deadline).toHaveAccessibleName("Attempt deadline (ms)");
    expect(deadline).toHaveAccessibleDescription(/^10,000–86,400,000 ms/);
    for (const title of [
      "Provider cooldown gate",
      "Connection cooldown",
      "Stream stall cooldown",
      "Request queue",
      "Provider concurrency caps",
      "Quota-share concurrency limit",
      "Combo cooldown wait",
      "Stream recovery",
      "Session affinity",
      "Provider error rules",
    ]) {
      expect(card(title)).toBeInTheDocument();
      expect(within(card(title)).getByRole("button", { name: `Save ${title}` })).toBeInTheDocument();
    }
    // Every numeric input is labelled and linked to its range text.
    for (const input of document.querySelectorAll<HTMLInputElement>("input[type=number][data-path]")) {
      expect(input).toHaveAccessibleName();
      expect(input.getAttribute("aria-describedby")).toContain(`${input.id}-range`);
    }
  });

  it("says what the request queue and quota-share settings do, with the validator's ranges", async () => {
    renderWithIpc(<ResiliencePage />);
    const queue = await screen.findByRole("region", { name: "Request queue" });
    expect(queue).toHaveTextContent(/every connection that could serve it is at its concurrency cap/);
    await waitFor(() =>
      expect(byPath("/requestQueue/maxWaitMs")).toHaveAccessibleDescription(
        /^1–86,400,000 ms .*RATE_LIMIT_QUEUE_TIMEOUT.*never reaches the upstream/,
      ),
    );
    expect(byPath("/requestQueue/executionMaxWaitMs")).toHaveAccessibleDescription(/RATE_LIMIT_EXECUTION_TIMEOUT/);
    expect(byPath("/requestQueue/maxQueueDepth")).toHaveAccessibleDescription(/^0–100,000 .*RATE_LIMIT_QUEUE_FULL/);
    const share = card("Quota-share concurrency limit");
    expect(share).toHaveTextContent(/On: it waits in that connection's queue.*Off: it is refused at once with a 429/);
  });

  it("saves a group as one patch", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_patch: () => f.resilienceSettings({}, 2),
    });
    await screen.findByRole("region", { name: "Request queue" });
    const depth = byPath("/requestQueue/maxQueueDepth");
    await user.clear(depth);
    await user.type(depth, "250");
    await user.click(byPath("/requestQueue/autoEnableApiKeyProviders"));
    await user.click(screen.getByRole("button", { name: "Save Request queue" }));
    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    const patch = callsOf(calls, "resilience_patch")[0].args.patch as Record<string, unknown>;
    expect(patch.requestQueue).toEqual({
      maxWaitMs: 30_000,
      executionMaxWaitMs: 600_000,
      maxQueueDepth: 250,
      autoEnableApiKeyProviders: false,
      globalConcurrentRequests: 0,
    });
    expect(Object.keys(patch)).toEqual(["requestQueue"]);
    expect(await within(card("Request queue")).findByText("Saved.")).toBeInTheDocument();
  });

  it("saves the stream recovery budgets with the rest of their card", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_patch: () => f.resilienceSettings({}, 2),
    });
    await screen.findByRole("region", { name: "Stream recovery" });
    const readiness = byPath("/streamRecovery/readinessBudgetMs");
    await user.clear(readiness);
    await user.type(readiness, "999");
    expect(readiness).toHaveAccessibleDescription(/Outside the allowed range/);
    await user.clear(readiness);
    await user.type(readiness, "15000");
    const deadline = byPath("/streamRecovery/attemptDeadlineMs");
    await user.clear(deadline);
    await user.type(deadline, "900000");
    await user.click(screen.getByRole("button", { name: "Save Stream recovery" }));
    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    const patch = callsOf(calls, "resilience_patch")[0].args.patch as Record<string, unknown>;
    expect(Object.keys(patch)).toEqual(["streamRecovery"]);
    expect(patch.streamRecovery).toMatchObject({ readinessBudgetMs: 15_000, stallBudgetMs: 120_000, attemptDeadlineMs: 900_000 });
  });

  it("shows the validator's issue on the field it names and keeps the input", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ResiliencePage />, {
      resilience_patch: fails("validation_failed", "2 invalid fields", [
        { path: "/providerBreaker/oauth/resetTimeoutMs", message: "must be a whole number from 1,000 to 86,400,000 ms" },
        { path: "/providerBreaker/oauth/degradationThreshold", message: "must be below failureThreshold (8)" },
      ]),
    });
    await screen.findByRole("region", { name: "Provider circuit breaker" });
    const reset = byPath("/providerBreaker/oauth/resetTimeoutMs");
    await user.clear(reset);
    await user.type(reset, "500");
    expect(reset).toHaveAccessibleDescription(/Outside the allowed range/);
    await user.click(screen.getByRole("button", { name: "Save Provider circuit breaker" }));
    await waitFor(() => expect(reset).toHaveAccessibleDescription(/must be a whole number from 1,000 to 86,400,000 ms/));
    expect(reset).toHaveValue(500);
    expect(reset).toHaveAttribute("aria-invalid", "true");
    expect(byPath("/providerBreaker/oauth/degradationThreshold")).toHaveAccessibleDescription(
      /must be below failureThreshold/,
    );
    expect(byPath("/providerBreaker/apikey/resetTimeoutMs")).not.toHaveAttribute("aria-invalid");
  });

  it("resets a group to the defaults", async () => {
    const user = userEvent.setup();
    const current = f.resilienceSettings({ sessionAffinityTtlMs: 600_000 }, 4);
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_get: () => current,
      resilience_patch: () => f.resilienceSettings({}, 5),
    });
    await screen.findByRole("region", { name: "Session affinity" });
    expect(byPath("/sessionAffinityTtlMs")).toHaveValue(600000);
    await user.click(screen.getByRole("button", { name: "Reset Session affinity to defaults" }));
    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    expect((callsOf(calls, "resilience_patch")[0].args.patch as { sessionAffinityTtlMs: number }).sessionAffinityTtlMs).toBe(0);
    expect(callsOf(calls, "resilience_patch")[0].args.expectedVersion).toBe(4);
    await waitFor(() => expect(byPath("/sessionAffinityTtlMs")).toHaveValue(0));
  });

  describe("provider error rules", () => {
    const RULES = "Provider error rules";
    const withRules = (rules: ProviderErrorRule[]) => () => f.resilienceSettings({ providerErrorRules: rules });
    /** Answers a patch with the document it produces. */
    const applyPatch = (a: Record<string, unknown>) =>
      f.resilienceSettings(a.patch as Record<string, unknown>, 2);
    const sentRules = (calls: Call[], n = 0): ProviderErrorRule[] => {
      const patch = callsOf(calls, "resilience_patch")[n].args.patch as { providerErrorRules: ProviderErrorRule[] };
      return patch.providerErrorRules;
    };
    const THREE = [
      f.errorRule({ provider: "anthropic", status: 429, match: "weekly limit", scope: "connection" }),
      f.errorRule({
        provider: "openai",
        status: null,
        match: "insufficient_quota",
        scope: "model",
        reason: "credits_exhausted",
        cooldownMs: 3_600_000,
      }),
      f.errorRule({ provider: "zhipu", status: 400, match: "额度不足", scope: "provider" }),
    ];

    it("explains what a rule is for when there is none", async () => {
      renderWithIpc(<ResiliencePage />);
      const rules = await screen.findByRole("region", { name: RULES });
      expect(within(rules).getByText("No error rules")).toBeInTheDocument();
      expect(rules).toHaveTextContent(/teaches the gateway an error the built-in rules miss/);
      expect(await within(rules).findByText(/0–50 items · 0 in this list/)).toBeInTheDocument();
      expect(within(rules).queryByRole("group", { name: "Rule 1" })).not.toBeInTheDocument();
      expect(within(rules).getByRole("button", { name: "Add rule" })).toHaveAccessibleDescription(/0–50 items/);
    });

    it("renders the stored rules with labelled fields and their ranges", async () => {
      renderWithIpc(<ResiliencePage />, { resilience_get: withRules(THREE) });
      const rules = await screen.findByRole("region", { name: RULES });
      expect(within(rules).queryByText("No error rules")).not.toBeInTheDocument();
      expect(await within(rules).findByText(/0–50 items · 3 in this list/)).toBeInTheDocument();

      const provider = within(rules).getByRole("textbox", { name: "Provider of rule 1" });
      expect(provider).toHaveValue("anthropic");
      expect(provider).toHaveAttribute("data-path", "/providerErrorRules/0/provider");
      expect(provider).toHaveAccessibleDescription(/1–64 characters/);
      expect(within(rules).getByRole("spinbutton", { name: "Status of rule 1" })).toHaveValue(429);
      expect(within(rules).getByRole("textbox", { name: "Match text of rule 1" })).toHaveValue("weekly limit");
      expect(within(rules).getByRole("combobox", { name: "Scope of rule 1" })).toHaveValue("connection");
      expect(within(rules).getByRole("combobox", { name: "Reason of rule 1" })).toHaveDisplayValue(
        "Default (quota exhausted)",
      );
      expect(within(rules).getByRole("spinbutton", { name: "Cooldown of rule 1 (ms)" })).toHaveValue(null);

      expect(byPath("/providerErrorRules/1/provider")).toHaveValue("openai");
      expect(byPath("/providerErrorRules/1/status")).toHaveValue(null);
      expect(byPath("/providerErrorRules/1/status")).toHaveAccessibleDescription(/100–599 · empty = not set/);
      expect(byPath("/providerErrorRules/1/match")).toHaveAccessibleDescription(/1–200 characters/);
      expect(byPath("/providerErrorRules/1/scope")).toHaveValue("model");
      expect(byPath("/providerErrorRules/1/reason")).toHaveValue("credits_exhausted");
      expect(byPath("/providerErrorRules/1/cooldownMs")).toHaveValue(3_600_000);
      expect(byPath("/providerErrorRules/1/cooldownMs")).toHaveAccessibleDescription(/0–86,400,000 ms/);
      expect(byPath("/providerErrorRules/2/match")).toHaveValue("额度不足");
      expect(byPath("/providerErrorRules/2/scope")).toHaveValue("provider");
      for (const n of [1, 2, 3]) {
        expect(within(rules).getByRole("group", { name: `Rule ${n}` })).toBeInTheDocument();
        expect(within(rules).getByRole("button", { name: `Remove rule ${n}` })).toBeInTheDocument();
      }
    });

    it("adds a rule and saves the whole list as one patch", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules([THREE[0]]),
        resilience_patch: applyPatch,
      });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: "Add rule" }));
      const provider = within(rules).getByRole("textbox", { name: "Provider of rule 2" });
      expect(provider).toHaveFocus();
      expect(within(rules).getByText("Unsaved changes")).toBeInTheDocument();
      await user.type(provider, " openai ");
      await user.type(byPath("/providerErrorRules/1/status"), "400");
      await user.type(byPath("/providerErrorRules/1/match"), "Insufficient_Quota");
      await user.selectOptions(within(rules).getByRole("combobox", { name: "Scope of rule 2" }), "model");
      await user.selectOptions(within(rules).getByRole("combobox", { name: "Reason of rule 2" }), "credits_exhausted");
      await user.type(byPath("/providerErrorRules/1/cooldownMs"), "600000");
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));

      await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
      const patch = callsOf(calls, "resilience_patch")[0].args.patch as Record<string, unknown>;
      expect(Object.keys(patch)).toEqual(["providerErrorRules"]);
      expect(patch.providerErrorRules).toEqual([
        f.errorRule({ provider: "anthropic", status: 429, match: "weekly limit", scope: "connection" }),
        {
          provider: "openai",
          status: 400,
          match: "Insufficient_Quota",
          scope: "model",
          reason: "credits_exhausted",
          cooldownMs: 600_000,
        },
      ]);
      expect(await within(rules).findByText("Saved.")).toBeInTheDocument();
      expect(within(rules).queryByText("Unsaved changes")).not.toBeInTheDocument();
      expect(byPath("/providerErrorRules/1/provider")).toHaveValue("openai");
    });

    it("sends an empty status, reason and cooldown as null", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, { resilience_patch: applyPatch });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: "Add rule" }));
      await user.type(byPath("/providerErrorRules/0/provider"), "kimi");
      await user.type(byPath("/providerErrorRules/0/match"), "rate limited");
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));
      await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
      expect(sentRules(calls)).toEqual([
        { provider: "kimi", status: null, match: "rate limited", scope: "connection", reason: null, cooldownMs: null },
      ]);
    });

    it("blocks a status that is not a whole number", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, { resilience_get: withRules([THREE[0]]) });
      await screen.findByRole("region", { name: RULES });
      const status = byPath("/providerErrorRules/0/status");
      await user.clear(status);
      await user.type(status, "4.5");
      await user.click(screen.getByRole("button", { name: `Save ${RULES}` }));
      await waitFor(() => expect(status).toHaveAccessibleDescription(/Enter a whole number \(no units or decimals\)/));
      expect(status).toHaveAttribute("aria-invalid", "true");
      expect(callsOf(calls, "resilience_patch")).toHaveLength(0);
    });

    it("shows the validator's issues on the row field they name", async () => {
      const user = userEvent.setup();
      renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules(THREE),
        resilience_patch: fails("validation_failed", "2 invalid fields", [
          { path: "/providerErrorRules/0/status", message: "must be a whole number from 100 to 599 (got 42)" },
          { path: "/providerErrorRules/2/match", message: "must be 1–200 characters (got 0)" },
        ]),
      });
      const rules = await screen.findByRole("region", { name: RULES });
      const status = within(rules).getByRole("spinbutton", { name: "Status of rule 1" });
      await user.clear(status);
      await user.type(status, "42");
      expect(status).toHaveAccessibleDescription(/Outside the allowed range/);
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));

      await waitFor(() =>
        expect(status).toHaveAccessibleDescription(/must be a whole number from 100 to 599 \(got 42\)/),
      );
      expect(status).toHaveAttribute("aria-invalid", "true");
      expect(status).toHaveValue(42);
      const match3 = within(rules).getByRole("textbox", { name: "Match text of rule 3" });
      expect(match3).toHaveAttribute("aria-invalid", "true");
      expect(match3).toHaveAccessibleDescription(/must be 1–200 characters \(got 0\)/);
      expect(byPath("/providerErrorRules/1/status")).not.toHaveAttribute("aria-invalid");
      expect(byPath("/providerErrorRules/0/match")).not.toHaveAttribute("aria-invalid");
      expect(within(rules).getByRole("alert")).toHaveTextContent("2 invalid fields");
      expect(within(rules).getByText("Unsaved changes")).toBeInTheDocument();
    });

    it("shows a list-level issue with the item range", async () => {
      const user = userEvent.setup();
      renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules([THREE[0]]),
        resilience_patch: fails("validation_failed", "1 invalid field", [
          { path: "/providerErrorRules", message: "must be 0–50 items (got 51)" },
        ]),
      });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));
      const add = within(rules).getByRole("button", { name: "Add rule" });
      await waitFor(() => expect(add).toHaveAccessibleDescription(/must be 0–50 items \(got 51\)/));
      expect(within(rules).getByRole("alert")).not.toHaveTextContent("/providerErrorRules");
    });

    it("removes a rule, keeps the others in order and saves the rest", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules(THREE),
        resilience_patch: applyPatch,
      });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: "Remove rule 2" }));
      expect(within(rules).queryByRole("group", { name: "Rule 3" })).not.toBeInTheDocument();
      expect(within(rules).queryByRole("button", { name: "Remove rule 3" })).not.toBeInTheDocument();
      const provider2 = within(rules).getByRole("textbox", { name: "Provider of rule 2" });
      expect(provider2).toHaveValue("zhipu");
      expect(provider2).toHaveFocus();
      expect(byPath("/providerErrorRules/1/scope")).toHaveValue("provider");
      expect(within(rules).getByText(/· 2 in this list/)).toBeInTheDocument();
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));
      await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
      expect(sentRules(calls)).toEqual([THREE[0], THREE[2]]);
      expect(await within(rules).findByText("Saved.")).toBeInTheDocument();
    });

    it("removing the last rule shows the empty state and saves an empty list", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules([THREE[1]]),
        resilience_patch: applyPatch,
      });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: "Remove rule 1" }));
      expect(within(rules).getByText("No error rules")).toBeInTheDocument();
      expect(within(rules).getByRole("button", { name: "Add rule" })).toHaveFocus();
      await user.click(within(rules).getByRole("button", { name: `Save ${RULES}` }));
      await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
      expect(sentRules(calls)).toEqual([]);
    });

    it("discards unsaved edits", async () => {
      const user = userEvent.setup();
      renderWithIpc(<ResiliencePage />, { resilience_get: withRules([THREE[0]]) });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: "Add rule" }));
      await user.click(within(rules).getByRole("button", { name: "Remove rule 1" }));
      await user.click(within(rules).getByRole("button", { name: "Discard changes" }));
      expect(within(rules).getAllByRole("group")).toHaveLength(1);
      expect(byPath("/providerErrorRules/0/provider")).toHaveValue("anthropic");
    });

    it("resets the rules to the defaults' empty list", async () => {
      const user = userEvent.setup();
      const { calls } = renderWithIpc(<ResiliencePage />, {
        resilience_get: withRules(THREE),
        resilience_patch: applyPatch,
      });
      const rules = await screen.findByRole("region", { name: RULES });
      await user.click(within(rules).getByRole("button", { name: `Reset ${RULES} to defaults` }));
      await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
      expect(callsOf(calls, "resilience_patch")[0].args.patch).toEqual({ providerErrorRules: [] });
      expect(await within(rules).findByText("Defaults restored.")).toBeInTheDocument();
      expect(within(rules).getByText("No error rules")).toBeInTheDocument();
    });
  });

  describe("versions (changes made elsewhere are not overwritten)", () => {
    const expectedVersions = (calls: Call[]) => callsOf(calls, "resilience_patch").map((c) => c.args.expectedVersion);

    it("saves with the version it loaded, then with the version the gateway returned", async () => {
      const user = userEvent.setup();
      const store = versionedSettings(f.resilienceSettings({}, 7));
      const { calls } = renderWithIpc(<ResiliencePage />, store.handlers);
      await screen.findByRole("region", { name: "Request queue" });
      const depth = byPath("/requestQueue/maxQueueDepth");
      await user.clear(depth);
      await user.type(depth, "250");
      await user.click(screen.getByRole("button", { name: "Save Request queue" }));
      expect(await within(card("Request queue")).findByText("Saved.")).toBeInTheDocument();
      const ttl = byPath("/sessionAffinityTtlMs");
      await user.clear(ttl);
      await user.type(ttl, "60000");
      await user.click(screen.getByRole("button", { name: "Save Session affinity" }));
      expect(await within(card("Session affinity")).findByText("Saved.")).toBeInTheDocument();

      expect(expectedVersions(calls)).toEqual([7, 8]);
      expect(callsOf(calls, "resilience_patch")[0].args.patch).not.toHaveProperty("version");
      expect(store.doc).toMatchObject({ version: 9, sessionAffinityTtlMs: 60_000, requestQueue: { maxQueueDepth: 250 } });
      expect(callsOf(calls, "resilience_get")).toHaveLength(1);
    });

    it("a save refused as stale says Changed elsewhere; Reload keeps the edits over the current settings", async () => {
      const user = userEvent.setup();
      const store = versionedSettings(f.resilienceSettings({}, 3));
      const { calls } = renderWithIpc(<ResiliencePage />, store.handlers);
      await screen.findByRole("region", { name: "Request queue" });
      // Another client changes the same group; this page has not seen it.
      store.changeElsewhere({ requestQueue: { ...store.doc.requestQueue, maxWaitMs: 45_000 } });
      const depth = byPath("/requestQueue/maxQueueDepth");
      await user.clear(depth);
      await user.type(depth, "250");
      await user.click(screen.getByRole("button", { name: "Save Request queue" }));

      const alert = await within(card("Request queue")).findByRole("alert");
      expect(alert).toHaveTextContent("Changed elsewhere — reload");
      expect(alert).toHaveTextContent(/your change was not saved and nothing was overwritten/);
      expect(depth).toHaveValue(250);
      expect(store.doc.requestQueue).toMatchObject({ maxWaitMs: 45_000, maxQueueDepth: 0 });
      expect(within(card("Request queue")).queryByText("Saved.")).not.toBeInTheDocument();

      await user.click(within(alert).getByRole("button", { name: "Reload Request queue" }));
      expect(
        await within(card("Request queue")).findByText(/Reloaded the current values\. Your edits are kept on top of them/),
      ).toBeInTheDocument();
      expect(callsOf(calls, "resilience_get")).toHaveLength(2);
      expect(within(card("Request queue")).queryByRole("alert")).not.toBeInTheDocument();
      expect(byPath("/requestQueue/maxWaitMs")).toHaveValue(45_000);
      expect(depth).toHaveValue(250);
      expect(within(card("Request queue")).getByText("Unsaved changes")).toBeInTheDocument();

      await user.click(screen.getByRole("button", { name: "Save Request queue" }));
      expect(await within(card("Request queue")).findByText("Saved.")).toBeInTheDocument();
      expect(expectedVersions(calls)).toEqual([3, 4]);
      expect(store.doc.requestQueue).toMatchObject({ maxWaitMs: 45_000, maxQueueDepth: 250 });
    });

    it("takes in a change elsewhere to other fields; one to a field being edited refuses the save", async () => {
      const user = userEvent.setup();
      const store = versionedSettings(f.resilienceSettings({}, 1));
      const { calls, queryClient } = renderWithIpc(<ResiliencePage />, store.handlers);
      await screen.findByRole("region", { name: "Request queue" });
      const depth = byPath("/requestQueue/maxQueueDepth");
      await user.clear(depth);
      await user.type(depth, "250");
      // Another client changes another card; the page sees it (as on settingsChanged).
      store.changeElsewhere({ sessionAffinityTtlMs: 600_000 });
      await act(() => queryClient.invalidateQueries({ queryKey: queryKeys.resilience }));
      await waitFor(() => expect(byPath("/sessionAffinityTtlMs")).toHaveValue(600_000));
      expect(depth).toHaveValue(250);
      await user.click(screen.getByRole("button", { name: "Save Request queue" }));
      expect(await within(card("Request queue")).findByText("Saved.")).toBeInTheDocument();
      expect(expectedVersions(calls)).toEqual([2]);

      // Now the field being edited changes elsewhere: the edit stays on screen, and
      // the save names the version it was made to, which the gateway refuses.
      await user.clear(depth);
      await user.type(depth, "300");
      store.changeElsewhere({ requestQueue: { ...store.doc.requestQueue, maxQueueDepth: 500 } });
      await act(() => queryClient.invalidateQueries({ queryKey: queryKeys.resilience }));
      await waitFor(() => expect(callsOf(calls, "resilience_get")).toHaveLength(3));
      expect(depth).toHaveValue(300);
      await user.click(screen.getByRole("button", { name: "Save Request queue" }));
      expect(await within(card("Request queue")).findByRole("alert")).toHaveTextContent("Changed elsewhere — reload");
      expect(expectedVersions(calls)).toEqual([2, 3]);
      expect(store.doc.requestQueue?.maxQueueDepth).toBe(500);
    });

    it("Discard changes after a stale save shows the current settings", async () => {
      const user = userEvent.setup();
      const store = versionedSettings(f.resilienceSettings({}, 1));
      renderWithIpc(<ResiliencePage />, store.handlers);
      await screen.findByRole("region", { name: "Session affinity" });
      store.changeElsewhere({ sessionAffinityTtlMs: 600_000 });
      const ttl = byPath("/sessionAffinityTtlMs");
      await user.clear(ttl);
      await user.type(ttl, "5000");
      await user.click(screen.getByRole("button", { name: "Save Session affinity" }));
      await within(card("Session affinity")).findByRole("alert");
      await user.click(within(card("Session affinity")).getByRole("button", { name: "Discard changes" }));
      await waitFor(() => expect(ttl).toHaveValue(600_000));
      expect(within(card("Session affinity")).getByText("Reloaded the current values. Your change was not saved.")).toBeInTheDocument();
      expect(store.doc.sessionAffinityTtlMs).toBe(600_000);
    });

    it("keeps an edited rule list through a stale save and Reload, then saves it with the new version", async () => {
      const user = userEvent.setup();
      const rule = f.errorRule();
      const store = versionedSettings(f.resilienceSettings({ providerErrorRules: [rule] }, 5));
      const { calls } = renderWithIpc(<ResiliencePage />, store.handlers);
      const rules = await screen.findByRole("region", { name: "Provider error rules" });
      store.changeElsewhere({ sessionAffinityTtlMs: 1_000 });
      await user.click(within(rules).getByRole("button", { name: "Remove rule 1" }));
      await user.click(within(rules).getByRole("button", { name: "Save Provider error rules" }));
      const alert = await within(rules).findByRole("alert");
      expect(alert).toHaveTextContent("Changed elsewhere — reload");
      expect(store.doc.providerErrorRules).toEqual([rule]);

      await user.click(within(alert).getByRole("button", { name: "Reload Provider error rules" }));
      expect(await within(rules).findByText(/Your edited list is kept in the form/)).toBeInTheDocument();
      expect(within(rules).getByText("No error rules")).toBeInTheDocument();
      await user.click(within(rules).getByRole("button", { name: "Save Provider error rules" }));
      expect(await within(rules).findByText("Saved.")).toBeInTheDocument();
      expect(expectedVersions(calls)).toEqual([5, 6]);
      expect(store.doc).toMatchObject({ providerErrorRules: [], sessionAffinityTtlMs: 1_000, version: 7 });
    });
  });

  it("shows live breakers and resets one or all", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      breakers_list: () => [
        f.breaker({
          provider: "anthropic",
          state: "OPEN",
          failureCount: 9,
          lastFailureAt: Date.now() - 30_000,
          lastFailureKind: "server_error",
          retryAfterMs: 45_000,
          openUntil: Date.now() + 45_000,
        }),
        f.breaker({ provider: "openai", state: "DEGRADED", failureCount: 7, degradationThreshold: 7, failureThreshold: 12 }),
      ],
      breakers_reset: () => ({ resetCount: 1 }),
    });
    const table = await screen.findByRole("table", { name: "Provider breaker states" });
    const open = within(table).getByRole("rowheader", { name: "anthropic" }).closest("tr")!;
    expect(within(open).getByText("Open")).toBeInTheDocument();
    expect(within(open).getByText(/^4[45]s$/)).toBeInTheDocument();
    expect(open).toHaveTextContent("server error");
    expect(within(table).getByText("Degraded")).toBeInTheDocument();
    await user.click(within(table).getByRole("button", { name: "Reset breaker of anthropic" }));
    await waitFor(() => expect(callsOf(calls, "breakers_reset")[0]?.args).toEqual({ request: { provider: "anthropic" } }));
    expect(await screen.findByText("Breaker of anthropic: 1 reset to closed.")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Reset all breakers" }));
    await waitFor(() => expect(callsOf(calls, "breakers_reset")[1]?.args).toEqual({ request: { provider: null } }));
  });
});

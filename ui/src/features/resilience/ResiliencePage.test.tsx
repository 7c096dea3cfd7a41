import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc } from "../../test/harness";
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
    for (const title of [
      "Provider cooldown gate",
      "Connection cooldown",
      "Stream stall cooldown",
      "Request queue",
      "Quota-share concurrency limit",
      "Combo cooldown wait",
      "Stream recovery",
      "Session affinity",
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

  it("saves a group as one patch", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_patch: () => f.resilienceDefaults(),
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
    });
    expect(Object.keys(patch)).toEqual(["requestQueue"]);
    expect(await within(card("Request queue")).findByText("Saved.")).toBeInTheDocument();
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
    const current = { ...f.resilienceDefaults(), sessionAffinityTtlMs: 600_000 };
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_get: () => current,
      resilience_patch: () => f.resilienceDefaults(),
    });
    await screen.findByRole("region", { name: "Session affinity" });
    expect(byPath("/sessionAffinityTtlMs")).toHaveValue(600000);
    await user.click(screen.getByRole("button", { name: "Reset Session affinity to defaults" }));
    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    expect((callsOf(calls, "resilience_patch")[0].args.patch as { sessionAffinityTtlMs: number }).sessionAffinityTtlMs).toBe(0);
    await waitFor(() => expect(byPath("/sessionAffinityTtlMs")).toHaveValue(0));
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

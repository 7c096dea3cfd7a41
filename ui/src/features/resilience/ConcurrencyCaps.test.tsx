// The shared concurrency caps on the Resilience page (SPEC 4.6): the gateway-wide cap
// in the Request queue card and the provider caps' own card (`provider=cap` lines).
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, renderWithIpc, versionedSettings, type Call } from "../../test/harness";
import { ResiliencePage } from "./ResiliencePage";

const QUEUE = "Request queue";
const PROVIDERS = "Provider concurrency caps";

const sentPatch = (calls: Call[], n = 0) => callsOf(calls, "resilience_patch")[n].args.patch as Record<string, unknown>;
/** Answers a patch with the document it produces. */
const applyPatch = (a: Record<string, unknown>) => f.resilienceSettings(a.patch as Record<string, unknown>, 2);
const withCaps = (caps: Record<string, number>) => () => f.resilienceSettings({ providerConcurrency: caps });

describe("Resilience: gateway-wide concurrency cap", () => {
  it("is edited in the Request queue card with its range and saved with that group", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, { resilience_patch: applyPatch });
    const queue = await screen.findByRole("region", { name: QUEUE });
    const cap = within(queue).getByRole("spinbutton", { name: "Gateway-wide concurrency cap" });
    expect(cap).toHaveValue(0);
    await waitFor(() => expect(cap).toHaveAccessibleDescription(/^0–100,000 .*0 = no cap.*until its answer ends/));

    await user.clear(cap);
    await user.type(cap, "4");
    expect(within(queue).getByText("Unsaved changes")).toBeInTheDocument();
    await user.click(within(queue).getByRole("button", { name: `Save ${QUEUE}` }));

    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    expect(Object.keys(sentPatch(calls))).toEqual(["requestQueue"]);
    expect(sentPatch(calls).requestQueue).toMatchObject({ globalConcurrentRequests: 4, maxQueueDepth: 0 });
    expect(await within(queue).findByText("Saved.")).toBeInTheDocument();
    expect(within(queue).queryByText("Unsaved changes")).not.toBeInTheDocument();
    expect(cap).toHaveValue(4);
  });

  it("shows the gateway's issue on the field", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ResiliencePage />, {
      resilience_patch: fails("validation_failed", "1 invalid field", [
        { path: "/requestQueue/globalConcurrentRequests", message: "must be 0–100,000 (got 200000)" },
      ]),
    });
    const queue = await screen.findByRole("region", { name: QUEUE });
    const cap = within(queue).getByRole("spinbutton", { name: "Gateway-wide concurrency cap" });
    await user.clear(cap);
    await user.type(cap, "200000");
    await user.click(within(queue).getByRole("button", { name: `Save ${QUEUE}` }));
    await waitFor(() => expect(cap).toHaveAccessibleDescription(/must be 0–100,000 \(got 200000\)/));
    expect(cap).toHaveAttribute("aria-invalid", "true");
    expect(cap).toHaveValue(200000);
  });
});

describe("Resilience: provider concurrency caps", () => {
  it("shows the stored caps one provider=cap per line, with the ranges", async () => {
    renderWithIpc(<ResiliencePage />, { resilience_get: withCaps({ glm: 2, openrouter: 5 }) });
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    const caps = within(providers).getByRole("textbox", { name: "Provider caps" });
    expect(caps).toHaveValue("glm=2\nopenrouter=5");
    expect(caps).toHaveAttribute("data-path", "/providerConcurrency");
    await waitFor(() =>
      expect(caps).toHaveAccessibleDescription(/^0–200 items .*Each provider: id 1–64 characters, cap 1–100,000\./),
    );
    expect(providers).toHaveTextContent(/A provider not listed has no provider cap/);
  });

  it("saves the edited caps as one map that replaces the stored one", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_get: withCaps({ glm: 2, kimi: 1 }),
      resilience_patch: applyPatch,
    });
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    const caps = within(providers).getByRole("textbox", { name: "Provider caps" });
    await user.clear(caps);
    await user.type(caps, "glm=3{Enter}openrouter = 5");
    expect(within(providers).getByText("Unsaved changes")).toBeInTheDocument();
    await user.click(within(providers).getByRole("button", { name: `Save ${PROVIDERS}` }));

    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    expect(sentPatch(calls)).toEqual({ providerConcurrency: { glm: 3, openrouter: 5 } });
    expect(callsOf(calls, "resilience_patch")[0].args.expectedVersion).toBe(1);
    expect(await within(providers).findByText("Saved.")).toBeInTheDocument();
    expect(within(providers).queryByText("Unsaved changes")).not.toBeInTheDocument();
    expect(caps).toHaveValue("glm=3\nopenrouter=5");
  });

  it("resets to the defaults' empty map (no provider caps)", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />, {
      resilience_get: withCaps({ glm: 2 }),
      resilience_patch: applyPatch,
    });
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    await user.click(within(providers).getByRole("button", { name: `Reset ${PROVIDERS} to defaults` }));
    await waitFor(() => expect(callsOf(calls, "resilience_patch")).toHaveLength(1));
    expect(sentPatch(calls)).toEqual({ providerConcurrency: {} });
    await waitFor(() => expect(within(providers).getByRole("textbox", { name: "Provider caps" })).toHaveValue(""));
  });

  it("checks the lines before sending", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ResiliencePage />);
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    const caps = within(providers).getByRole("textbox", { name: "Provider caps" });
    await user.type(caps, "glm 2{Enter}kimi=two{Enter}glm=1{Enter}glm=3");
    await user.click(within(providers).getByRole("button", { name: `Save ${PROVIDERS}` }));
    await waitFor(() =>
      expect(caps).toHaveAccessibleDescription(
        /Line 1: write provider=cap, e\.g\. glm=2 .*Line 2: the cap of kimi must be a whole number\. Line 4: glm is listed twice\./,
      ),
    );
    expect(caps).toHaveAttribute("aria-invalid", "true");
    expect(callsOf(calls, "resilience_patch")).toHaveLength(0);
  });

  it("shows the gateway's issue of one provider's cap at the editor, named by the provider", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ResiliencePage />, {
      resilience_get: withCaps({ glm: 2 }),
      resilience_patch: fails("validation_failed", "1 invalid field", [
        { path: "/providerConcurrency/kimi", message: "must be 1–100,000 (got 0)" },
      ]),
    });
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    const caps = within(providers).getByRole("textbox", { name: "Provider caps" });
    await user.type(caps, "{Enter}kimi=0");
    await user.click(within(providers).getByRole("button", { name: `Save ${PROVIDERS}` }));

    await waitFor(() => expect(caps).toHaveAccessibleDescription(/kimi: must be 1–100,000 \(got 0\)/));
    expect(caps).toHaveAttribute("aria-invalid", "true");
    expect(caps).toHaveValue("glm=2\nkimi=0");
    const alert = within(providers).getByRole("alert");
    expect(alert).toHaveTextContent("1 invalid field");
    // Claimed by the editor, so not repeated in the form-level list.
    expect(alert).not.toHaveTextContent("/providerConcurrency/kimi");
    expect(within(providers).getByText("Unsaved changes")).toBeInTheDocument();
  });

  it("keeps edited caps through a save refused as stale and Reload, then saves them with the new version", async () => {
    const user = userEvent.setup();
    const store = versionedSettings(f.resilienceSettings({ providerConcurrency: { glm: 2 } }, 3));
    const { calls } = renderWithIpc(<ResiliencePage />, store.handlers);
    const providers = await screen.findByRole("region", { name: PROVIDERS });
    // Another client changes the same map; this page has not seen it.
    store.changeElsewhere({ providerConcurrency: { glm: 2, kimi: 1 } });
    const caps = within(providers).getByRole("textbox", { name: "Provider caps" });
    await user.clear(caps);
    await user.type(caps, "glm=4");
    await user.click(within(providers).getByRole("button", { name: `Save ${PROVIDERS}` }));

    const alert = await within(providers).findByRole("alert");
    expect(alert).toHaveTextContent("Changed elsewhere — reload");
    expect(store.doc.providerConcurrency).toEqual({ glm: 2, kimi: 1 });
    await user.click(within(alert).getByRole("button", { name: `Reload ${PROVIDERS}` }));
    expect(await within(providers).findByText(/Your edits are kept on top of them/)).toBeInTheDocument();
    expect(caps).toHaveValue("glm=4");

    await user.click(within(providers).getByRole("button", { name: `Save ${PROVIDERS}` }));
    expect(await within(providers).findByText("Saved.")).toBeInTheDocument();
    expect(callsOf(calls, "resilience_patch").map((c) => c.args.expectedVersion)).toEqual([3, 4]);
    expect(store.doc).toMatchObject({ providerConcurrency: { glm: 4 }, version: 5 });
  });
});

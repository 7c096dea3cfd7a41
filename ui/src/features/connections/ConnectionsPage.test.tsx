import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc, versionedConnections } from "../../test/harness";
import { ConnectionsPage } from "./ConnectionsPage";

const rowOf = (name: string) => screen.getByRole("rowheader", { name: new RegExp(name) }).closest("tr")!;

describe("ConnectionsPage", () => {
  it("shows a loading state", () => {
    renderWithIpc(<ConnectionsPage />, { connections_list: pending });
    expect(screen.getByText("Loading connections…")).toBeInTheDocument();
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<ConnectionsPage />, { connections_list: fails("internal_error", "store unavailable") });
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Could not load connections");
    expect(alert).toHaveTextContent("store unavailable");
    expect(within(alert).getByRole("button", { name: "Retry" })).toBeInTheDocument();
  });

  it("explains the empty list and offers to add a connection", async () => {
    renderWithIpc(<ConnectionsPage />);
    expect(await screen.findByText("No connections yet")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Add connection" })).toBeInTheDocument();
  });

  it("shows each connection's derived status: badge, countdown, why in words, the last Test, usage windows", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [
        f.connection({
          status: f.cooling(125_000, { lockedModels: ["glm-5"] }),
        }),
        f.claudeConnection({
          lastTest: { at: Date.now() - 120_000, ok: true, message: "the upstream accepted the credentials" },
          usage: f.usage(),
        }),
        f.connection({ id: "or-1", provider: "openrouter", name: "OpenRouter", status: f.breakerOpen("openrouter") }),
        f.connection({
          id: "ollama",
          provider: "ollama",
          name: "Ollama",
          lastTest: { at: Date.now() - 5_000, ok: false, message: "could not connect to the upstream" },
          status: f.routability({
            state: "test-failed",
            label: "Test failed",
            detail: "Its last Test failed: could not connect to the upstream. Requests still try it; fix the connection and Test again.",
          }),
        }),
      ],
    });
    await screen.findByRole("table", { name: "Connections" });
    const glm = rowOf("GLM main");
    expect(within(glm).getByText("Cooling")).toHaveAttribute("title", expect.stringContaining("HTTP 429"));
    expect(within(glm).getByText(/^2m 0[45]s$/)).toBeInTheDocument();
    expect(glm).toHaveTextContent("Cooling down: rate limited by the upstream (HTTP 429).");
    expect(within(glm).getByRole("link", { name: "1 model lockout" })).toHaveAttribute("href", "#/model-lockout");
    expect(within(glm).queryByRole("list", { name: "Usage windows" })).not.toBeInTheDocument(); // no reading
    const claude = rowOf("Claude Max");
    expect(within(claude).getByText("Active")).toBeInTheDocument();
    expect(claude).not.toHaveTextContent("In rotation."); // the sentence only when it is not plainly routable
    expect(claude).toHaveTextContent(/Last Test passed\s*2m ago/);
    const usage = within(claude).getByRole("list", { name: "Usage windows" });
    expect(usage).toHaveTextContent(/^5h 87% · resets in (2h 00m 00s|1h 59m 5\ds)7d 31% · resets in (4d 00h|3d 23h)$/);
    const or = rowOf("OpenRouter");
    expect(within(or).getByText("Breaker open")).toHaveClass("badge-danger");
    expect(or).toHaveTextContent("Provider 'openrouter' failed 2 times in a row");
    const ollama = rowOf("Ollama");
    expect(within(ollama).getByText("Test failed", { selector: ".badge" })).toHaveClass("badge-danger");
    expect(ollama).toHaveTextContent("could not connect to the upstream");
    expect(within(ollama).getByText("Last Test failed").closest("div")).toHaveAttribute(
      "title",
      "could not connect to the upstream",
    );
  });

  it("shows a Test's result on the row after it ran (the list is refetched)", async () => {
    const user = userEvent.setup();
    let tested = false;
    const failing = f.routability({
      state: "test-failed",
      label: "Test failed",
      detail: "Its last Test failed: could not connect to the upstream. Requests still try it; fix the connection and Test again.",
    });
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [
        tested
          ? f.connection({
              status: failing,
              lastTest: { at: Date.now(), ok: false, message: "could not connect to the upstream" },
            })
          : f.connection(),
      ],
      connections_test: () => {
        tested = true;
        return { ok: false, status: null, latencyMs: 3, message: "could not connect to the upstream" };
      },
    });
    await user.click(await screen.findByRole("button", { name: "Test connection GLM main" }));
    expect(await screen.findByText(/Test of GLM main: failed \(no HTTP status, 3 ms\)/)).toBeInTheDocument();
    await waitFor(() => expect(within(rowOf("GLM main")).getByText("Test failed", { selector: ".badge" })).toBeInTheDocument());
    expect(rowOf("GLM main")).toHaveTextContent(/Last Test failed\s*just now/);
  });

  it("adds a connection", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_create: () => f.connection({ id: "glm-2", name: "GLM two" }),
    });
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    await user.type(screen.getByLabelText(/^Provider/), "glm");
    await user.type(screen.getByLabelText("ID"), "glm-2");
    await user.type(screen.getByLabelText("Name"), "GLM two");
    await user.selectOptions(screen.getByLabelText("API format"), "openai");
    await user.type(screen.getByLabelText("API key"), "sk-test");
    await user.type(screen.getByLabelText("Base URL"), "http://127.0.0.1:9001/v1");
    await user.clear(screen.getByLabelText("Priority"));
    await user.type(screen.getByLabelText("Priority"), "2");
    await user.type(screen.getByLabelText("Models"), "glm-5, glm-4.6");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(
      await screen.findByText("Added GLM two. Test of GLM two: OK (HTTP 200, 5 ms). the upstream accepted the credentials"),
    ).toBeInTheDocument();
    expect(callsOf(calls, "connections_create")[0].args).toEqual({
      request: {
        id: "glm-2",
        provider: "glm",
        apiFormat: "openai",
        name: "GLM two",
        authKind: "api_key",
        apiKey: "sk-test",
        accessToken: null,
        refreshToken: null,
        expiresAt: null,
        baseUrl: "http://127.0.0.1:9001/v1",
        priority: 2,
        enabled: true,
        maxConcurrent: null,
        rateLimitOverrides: null,
        rateLimitProtection: null,
        models: ["glm-5", "glm-4.6"],
        providerSpecific: null,
      },
    });
  });

  it("shows each connection's live load: in flight against its cap, queued, per-model gates", async () => {
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection({ maxConcurrent: 1 }), f.claudeConnection()],
      rate_limits_get: () => f.rateLimits({
        connections: [
          f.flow({
            inFlight: 1,
            queued: 2,
            gate: { cap: 1, inFlight: 1, queued: 2 },
            models: [{ model: "glm-5", gate: { cap: 2, inFlight: 1, queued: 0 } }],
          }),
          f.flow({ connectionId: "claude-max", provider: "anthropic", name: "Claude Max", inFlight: 3 }),
        ],
      }),
    });
    await screen.findByRole("table", { name: "Connections" });
    const glm = rowOf("GLM main");
    await waitFor(() => expect(glm).toHaveTextContent("1 in flight (cap 1)"));
    expect(glm).toHaveTextContent("2 queued");
    expect(glm).toHaveTextContent("glm-5: 1 in flight (cap 2), 0 queued");
    expect(within(glm).getByText("At cap")).toBeInTheDocument();
    const claude = rowOf("Claude Max");
    expect(claude).toHaveTextContent("3 in flight (no cap)");
    expect(claude).not.toHaveTextContent("queued");
  });

  it("adds a connection with per-model caps and its own queue budgets", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_create: () => f.connection({ id: "glm-2", name: "GLM two" }),
    });
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    await user.type(screen.getByLabelText(/^Provider/), "glm");
    const flow = screen.getByRole("region", { name: "Flow control" });
    await user.type(within(flow).getByLabelText("Max concurrent requests"), "4");
    await user.type(within(flow).getByLabelText("Per-model caps"), "glm-5=1{Enter}meta/llama-3 = 2, glm-4.6=3");
    const wait = within(flow).getByLabelText("Queue wait budget (ms)");
    expect(wait).toHaveAccessibleDescription(/empty = Request queue → Max wait \(30 s\)/);
    await user.type(wait, "60000");
    expect(within(flow).getByLabelText("Execution bound (ms)")).toHaveAccessibleDescription(
      /1–86,400,000 ms .*empty = Request queue → Execution max wait \(10 min\)/,
    );
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(
      await screen.findByText("Added GLM two. Test of GLM two: OK (HTTP 200, 5 ms). the upstream accepted the credentials"),
    ).toBeInTheDocument();
    expect(callsOf(calls, "connections_create")[0].args.request).toMatchObject({
      maxConcurrent: 4,
      rateLimitOverrides: { modelConcurrency: { "glm-5": 1, "meta/llama-3": 2, "glm-4.6": 3 }, maxWaitMs: 60000 },
    });
  });

  it("forces rate-limit protection on and says when the settings already protect the connection", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection({ version: 3 })],
      connections_update: (a) => f.connection({ id: a.id as string, rateLimitProtection: true, version: 4 }),
    });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    const flow = screen.getByRole("region", { name: "Flow control" });
    const toggle = within(flow).getByRole("switch", { name: "Always protect from rate limits" });
    expect(toggle).not.toBeChecked();
    expect(toggle).toHaveAccessibleDescription(/API-key connections are protected anyway .* \(it is on\)/);
    await user.click(toggle);
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(callsOf(calls, "connections_update")).toHaveLength(1));
    expect(callsOf(calls, "connections_update")[0].args).toEqual({
      id: "glm-main",
      patch: { rateLimitProtection: true },
      expectedVersion: 3,
    });
  });

  it("edits the flow overrides as a whole, keeping the second cap, and shows a model's issue under the caps", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [
        f.connection({
          version: 2,
          rateLimitOverrides: { maxConcurrent: 4, modelConcurrency: { "glm-5": 2 }, maxWaitMs: 1000 },
        }),
      ],
      connections_update: fails("validation_failed", "1 invalid field", [
        { path: "/rateLimitOverrides/modelConcurrency/meta~1llama", message: "must be between 1 and 10000" },
      ]),
    });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    const flow = screen.getByRole("region", { name: "Flow control" });
    const caps = within(flow).getByLabelText("Per-model caps");
    expect(caps).toHaveValue("glm-5=2");
    expect(within(flow).getByLabelText("Queue wait budget (ms)")).toHaveValue(1000);
    expect(flow).toHaveTextContent(/A second cap of 4 .* also applies/);

    await user.type(caps, "{Enter}meta/llama=0");
    await user.clear(within(flow).getByLabelText("Queue wait budget (ms)"));
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(caps).toHaveAccessibleDescription(/meta\/llama: must be between 1 and 10000/));
    expect(callsOf(calls, "connections_update")[0].args).toEqual({
      id: "glm-main",
      patch: { rateLimitOverrides: { maxConcurrent: 4, modelConcurrency: { "glm-5": 2, "meta/llama": 0 } } },
      expectedVersion: 2,
    });
  });

  it("checks the per-model caps' syntax before sending", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, { connections_list: () => [f.connection()] });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    const caps = screen.getByLabelText("Per-model caps");
    await user.type(caps, "glm-5 2{Enter}glm-4.6=two{Enter}{Enter}glm-5=1{Enter}glm-5=3");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(caps).toHaveAccessibleDescription(
      /Line 1: write model=cap.*Line 2: the cap of glm-4.6 must be a whole number\. Line 5: glm-5 is listed twice\./,
    );
    expect(callsOf(calls, "connections_update")).toHaveLength(0);
  });

  it("edits the Claude options of a Claude OAuth connection and shows its live lane state", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.claudeConnection({ version: 6 })],
      connections_update: (a) => f.claudeConnection({ id: a.id as string, version: 7 }),
    });
    await user.click(await screen.findByRole("button", { name: "Edit connection Claude Max" }));
    const claude = screen.getByRole("region", { name: "Claude options" });
    const lane = within(claude).getByRole("switch", { name: "Low-priority lane (lowPriorityMode)" });
    const reset = within(claude).getByRole("switch", { name: "Automatic limit reset (autoLimitReset)" });
    expect(lane).not.toBeChecked();
    expect(reset).toBeChecked();
    const live = within(claude).getByRole("group", { name: "Usage-wall state" });
    expect(within(live).getByText("Lane active until").nextElementSibling).toHaveTextContent(/^(1h 00m 00s|59m 5\ds)/);
    expect(live).toHaveTextContent("already used");
    expect(within(live).getByText("Next reset available at").nextElementSibling).toHaveTextContent(/^[45]d \d\dh/);

    await user.click(lane);
    await user.type(within(claude).getByLabelText("Organization UUID"), "org-123");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Saved Claude Max.")).toBeInTheDocument();
    expect(callsOf(calls, "connections_update")[0].args).toEqual({
      id: "claude-max",
      patch: { providerSpecific: { lowPriorityMode: true, organizationUUID: "org-123" } },
      expectedVersion: 6,
    });
  });

  it("shows a Claude account's usage windows as bars with their reset times in its Claude section", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, { connections_list: () => [f.claudeConnection({ usage: f.usage() })] });
    await user.click(await screen.findByRole("button", { name: "Edit connection Claude Max" }));
    const claude = screen.getByRole("region", { name: "Claude options" });
    const windows = within(claude).getByRole("group", { name: "Usage windows" });
    const five = within(windows).getByRole("meter", { name: "5h window used" });
    expect(five).toHaveAttribute("aria-valuenow", "87.3");
    expect(five.closest("li")).toHaveTextContent(/^5h87\.3% usedBindingResets in (2h 00m 00s|1h 59m 5\ds) \(.+\) · allowed warning$/);
    const seven = within(windows).getByRole("meter", { name: "7d window used" });
    expect(seven).toHaveAttribute("aria-valuenow", "31");
    expect(seven.closest("li")).toHaveTextContent(/31% used/);
    expect(seven.closest("li")).toHaveTextContent(/Resets in (4d 00h|3d 23h)/);
    expect(windows).toHaveTextContent(/Account status: allowed warning\. Read from the upstream’s answer 1m ago\./);
  });

  it("says a Claude account has no usage reading yet, and shows nothing for others without one", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, { connections_list: () => [f.claudeConnection(), f.connection()] });
    await user.click(await screen.findByRole("button", { name: "Edit connection Claude Max" }));
    expect(within(screen.getByRole("group", { name: "Usage windows" })).getByText(/No usage reading yet/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    await user.click(screen.getByRole("button", { name: "Edit connection GLM main" }));
    expect(screen.queryByRole("group", { name: "Usage windows" })).not.toBeInTheDocument();
  });

  it("has no Claude section for API-key connections", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, { connections_list: () => [f.connection()] });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    expect(screen.getByRole("heading", { name: "Edit GLM main" })).toBeInTheDocument();
    expect(screen.queryByRole("region", { name: "Claude options" })).not.toBeInTheDocument();
    expect(screen.getByLabelText("API key")).toHaveAccessibleDescription(/leave empty to keep it/);
  });

  it("puts server validation issues on the matching fields and the rest at the top", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.claudeConnection()],
      connections_update: fails("validation_failed", "2 invalid fields", [
        { path: "/providerSpecific/organizationUUID", message: "must be a string" },
        { path: "/baseUrl", message: "must be an absolute http:// or https:// URL" },
        { path: "/rateLimitOverrides", message: "unknown field" },
      ]),
    });
    await user.click(await screen.findByRole("button", { name: "Edit connection Claude Max" }));
    const baseUrl = screen.getByLabelText("Base URL");
    await user.type(baseUrl, "ftp://x");
    await user.type(screen.getByLabelText("Organization UUID"), "x");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() =>
      expect(screen.getByLabelText("Organization UUID")).toHaveAccessibleDescription(/must be a string/),
    );
    expect(baseUrl).toHaveAccessibleDescription(/must be an absolute http/);
    expect(baseUrl).toHaveValue("ftp://x");
    const form = screen.getByRole("region", { name: "Edit Claude Max" });
    const summary = within(form).getAllByRole("alert")[0];
    // In words: how many values need a fix, and the one no field shows by its section's name.
    expect(summary).toHaveTextContent(/^3 values need a fix before this can be saved\.Flow control: unknown field$/);
    expect(summary).not.toHaveTextContent("/");
  });

  it("says the gateway's problems in words and clears each one when its field is edited", async () => {
    const user = userEvent.setup();
    let attempt = 0;
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_create: () =>
        ++attempt === 1
          ? Promise.reject({
              code: "validation_failed",
              message: 'invalid document: /apiFormat: provider \'acme\' has no implied format: state "anthropic", "openai", "openai-chat" or "openai-responses"; /apiKey: required when authKind is "api_key"; /providerSpecific/quotaFamilies: must be an object',
              issues: [
                { path: "/apiFormat", message: 'provider \'acme\' has no implied format: state "anthropic", "openai", "openai-chat" or "openai-responses"' },
                { path: "/apiKey", message: 'required when authKind is "api_key"' },
                { path: "/providerSpecific/quotaFamilies", message: "must be an object" },
              ],
            })
          : f.connection({ id: "acme-1", name: "acme-1", provider: "acme" }),
    });
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    await user.type(screen.getByLabelText(/^Provider/), "acme");
    await user.click(screen.getByRole("button", { name: "Save" }));
    const form = screen.getByRole("region", { name: "Add connection" });
    const banner = await within(form).findByRole("alert");
    expect(banner).toHaveTextContent(
      /^3 values need a fix before this can be saved\.Provider options › quota families: must be an object$/,
    );
    const format = screen.getByLabelText("API format");
    const key = screen.getByLabelText("API key");
    expect(format).toHaveAccessibleDescription(
      "the provider “acme” needs an API format: choose what its upstream speaks",
    );
    expect(key).toHaveAccessibleDescription("required when Authentication is “API key”");

    await user.selectOptions(format, "openai");
    expect(format).not.toHaveAccessibleDescription(/needs an API format/);
    expect(format).not.toHaveAttribute("aria-invalid");
    expect(key).toHaveAccessibleDescription(/required/);
    expect(banner).toHaveTextContent(/^2 values need a fix/);
    await user.type(key, "sk-1");
    expect(key).not.toHaveAccessibleDescription(/required/);
    expect(banner).toHaveTextContent(/^One value needs a fix/);
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByText(/^Added acme-1\. Test of acme-1: OK/)).toBeInTheDocument();
    expect(callsOf(calls, "connections_create")).toHaveLength(2);
  });

  it("fills the form from a preset: only the key is left to type; the new connection is tested at once", async () => {
    const user = userEvent.setup();
    let created = false;
    const saved = () =>
      f.connection({
        id: "glm-1a2b3c4d",
        name: "GLM (Z.ai), OpenAI-compatible endpoint",
        baseUrl: "https://api.z.ai/api/paas/v4",
        models: ["glm-4.6", "glm-4.5-air"],
        lastTest: { at: Date.now(), ok: true, message: "the upstream accepted the credentials" },
      });
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => (created ? [saved()] : []),
      connections_create: () => {
        created = true;
        return saved();
      },
    });
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    const preset = screen.getByLabelText("Preset");
    await waitFor(() => expect(within(preset).getAllByRole("option")).toHaveLength(4));
    expect(preset).toHaveValue("");
    await user.selectOptions(preset, "glm");
    expect(screen.getByLabelText(/^Provider/)).toHaveValue("glm");
    expect(screen.getByLabelText("API format")).toHaveValue("openai");
    expect(screen.getByLabelText("Authentication")).toHaveValue("api_key");
    expect(screen.getByLabelText("Base URL")).toHaveValue("https://api.z.ai/api/paas/v4");
    expect(screen.getByLabelText("Models")).toHaveValue("glm-4.6\nglm-4.5-air");
    expect(screen.getByLabelText("Name")).toHaveValue("GLM (Z.ai), OpenAI-compatible endpoint");
    expect(preset).toHaveAccessibleDescription(/type the API key, then save/);
    const key = screen.getByLabelText("API key");
    expect(key).toHaveAccessibleDescription("Get a key: z.ai → API keys.");
    await user.type(key, "sk-glm");
    await user.click(screen.getByRole("button", { name: "Save" }));
    expect(
      await screen.findByText(
        "Added GLM (Z.ai), OpenAI-compatible endpoint. Test of GLM (Z.ai), OpenAI-compatible endpoint: OK (HTTP 200, 5 ms). the upstream accepted the credentials",
      ),
    ).toBeInTheDocument();
    expect(callsOf(calls, "connections_create")[0].args.request).toMatchObject({
      id: null,
      provider: "glm",
      apiFormat: "openai",
      name: "GLM (Z.ai), OpenAI-compatible endpoint",
      authKind: "api_key",
      apiKey: "sk-glm",
      baseUrl: "https://api.z.ai/api/paas/v4",
      models: ["glm-4.6", "glm-4.5-air"],
    });
    expect(callsOf(calls, "connections_test")[0].args).toEqual({ id: "glm-1a2b3c4d" });
    // The Test's result is on the row (the list was refetched after it).
    const row = await waitFor(() => rowOf("GLM \\(Z.ai\\)"));
    await waitFor(() => expect(row).toHaveTextContent(/Last Test passed\s*just now/));
  });

  it("asks no key for a local preset, keeps a name the user typed, and points a Claude account to the login import", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />);
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    await user.type(screen.getByLabelText("Name"), "Laptop Ollama");
    const preset = screen.getByLabelText("Preset");
    await waitFor(() => expect(within(preset).getAllByRole("option")).toHaveLength(4));
    await user.selectOptions(preset, "ollama");
    expect(screen.getByLabelText("Authentication")).toHaveValue("none");
    expect(screen.queryByLabelText("API key")).not.toBeInTheDocument();
    expect(screen.getByLabelText("Name")).toHaveValue("Laptop Ollama");
    expect(preset).toHaveAccessibleDescription(/needs no key/);

    await user.selectOptions(preset, "claude-account");
    const note = screen.getByRole("note", { name: "Import your Claude Code login" });
    expect(note).toHaveTextContent("Log in with Claude Code on this machine, then import its login");
    expect(note).toHaveTextContent("~/.claude/.credentials.json");
    expect(within(note).getByRole("button", { name: "Import Claude Code login" })).toBeInTheDocument();
    expect(screen.getByLabelText("Access token")).toBeInTheDocument();
    expect(screen.getByRole("region", { name: "Claude options" })).toBeInTheDocument();
  });

  it("imports Claude Code's login from the Claude account preset and shows the new connection with its token expiry", async () => {
    const user = userEvent.setup();
    const expires = Date.now() + 5 * 3_600_000;
    let list: ReturnType<typeof f.claudeConnection>[] = [];
    const imported = f.claudeConnection({ id: "claude-login", name: "Claude login", tokenExpiresAt: expires });
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => list,
      connections_import_claude_login: () => {
        list = [imported];
        return { change: "created", subscription: "max", connection: imported };
      },
    });
    await user.click(await screen.findByRole("button", { name: "Add connection" }));
    const preset = screen.getByLabelText("Preset");
    await waitFor(() => expect(within(preset).getAllByRole("option")).toHaveLength(4));
    await user.selectOptions(preset, "claude-account");
    await user.click(screen.getByRole("button", { name: "Import Claude Code login" }));
    expect(
      await screen.findByText(/Imported your Claude Code login as Claude login \(max subscription\)\. Its access token expires/),
    ).toBeInTheDocument();
    expect(callsOf(calls, "connections_import_claude_login")[0].args).toEqual({ request: {} });
    expect(screen.queryByLabelText("Preset")).not.toBeInTheDocument(); // the form closed
    const row = (await screen.findByRole("rowheader", { name: /Claude login/ })).closest("tr")!;
    expect(row).toHaveTextContent(/Token expires in (4h 59m|5h 00m)/);
  });

  it("says in words why Claude Code's login could not be imported", async () => {
    const user = userEvent.setup();
    renderWithIpc(<ConnectionsPage />, {
      connections_import_claude_login: fails("validation_failed", "The request is invalid.", [
        { path: "/path", message: "no Claude Code login at /home/u/.claude/.credentials.json: log in with `claude` first" },
      ]),
    });
    await user.click(await screen.findByRole("button", { name: "Import Claude Code login" }));
    expect(
      await screen.findByText(
        "Could not import the Claude Code login: The request is invalid. no Claude Code login at /home/u/.claude/.credentials.json: log in with `claude` first.",
      ),
    ).toBeInTheDocument();
  });

  it("tests a connection and shows the result", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      connections_test: () => ({ ok: false, status: 401, latencyMs: 212, message: "invalid x-api-key" }),
    });
    await user.click(await screen.findByRole("button", { name: "Test connection GLM main" }));
    expect(await screen.findByText(/Test of GLM main: failed \(HTTP 401, 212 ms\)\. invalid x-api-key/)).toBeInTheDocument();
    expect(callsOf(calls, "connections_test")[0].args).toEqual({ id: "glm-main" });
  });

  it("deletes a connection after confirmation", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<ConnectionsPage />, {
      connections_list: () => [f.connection()],
      connections_delete: () => null,
    });
    await user.click(await screen.findByRole("button", { name: "Delete connection GLM main" }));
    expect(callsOf(calls, "connections_delete")).toHaveLength(0);
    await user.click(screen.getByRole("button", { name: "Delete connection" }));
    expect(await screen.findByText("Deleted GLM main.")).toBeInTheDocument();
    expect(callsOf(calls, "connections_delete")[0].args).toEqual({ id: "glm-main", expectedVersion: 1 });
  });

  it("an edit refused as stale says Changed elsewhere; Reload keeps the edit over the current connection", async () => {
    const user = userEvent.setup();
    const conns = versionedConnections([f.claudeConnection({ version: 4 })]);
    const { calls } = renderWithIpc(<ConnectionsPage />, conns.handlers);
    await user.click(await screen.findByRole("button", { name: "Edit connection Claude Max" }));
    await user.click(screen.getByRole("switch", { name: "Low-priority lane (lowPriorityMode)" }));
    // Another client renames the connection and changes its priority; this page has not seen it.
    conns.changeElsewhere("claude-max", { name: "Claude Max (work)", priority: 3 });
    await user.click(screen.getByRole("button", { name: "Save" }));

    const form = screen.getByRole("region", { name: "Edit Claude Max" });
    const alert = await within(form).findByRole("alert");
    expect(alert).toHaveTextContent("Changed elsewhere — reload");
    expect(alert).toHaveTextContent(/This connection changed somewhere else/);
    expect(conns.get("claude-max")?.providerSpecific).toMatchObject({ lowPriorityMode: false });

    await user.click(within(alert).getByRole("button", { name: "Reload Edit Claude Max" }));
    expect(await screen.findByText(/Reloaded the current values\. Your edits are kept/)).toBeInTheDocument();
    expect(callsOf(calls, "connections_get")[0].args).toEqual({ id: "claude-max" });
    const reloaded = screen.getByRole("region", { name: "Edit Claude Max (work)" });
    expect(within(reloaded).queryByRole("alert")).not.toBeInTheDocument();
    expect(within(reloaded).getByLabelText("Name")).toHaveValue("Claude Max (work)");
    expect(within(reloaded).getByLabelText("Priority")).toHaveValue(3);
    expect(within(reloaded).getByRole("switch", { name: "Low-priority lane (lowPriorityMode)" })).toBeChecked();

    await user.click(within(reloaded).getByRole("button", { name: "Save" }));
    expect(await screen.findByText("Saved Claude Max (work).")).toBeInTheDocument();
    expect(callsOf(calls, "connections_update").map((c) => c.args)).toEqual([
      { id: "claude-max", patch: { providerSpecific: { lowPriorityMode: true } }, expectedVersion: 4 },
      { id: "claude-max", patch: { providerSpecific: { lowPriorityMode: true } }, expectedVersion: 5 },
    ]);
    expect(conns.get("claude-max")).toMatchObject({
      name: "Claude Max (work)",
      priority: 3,
      providerSpecific: { lowPriorityMode: true },
      version: 6,
    });
  });

  it("a delete refused as stale says Changed elsewhere; Reload refetches the list", async () => {
    const user = userEvent.setup();
    const conns = versionedConnections([f.connection({ version: 2 })]);
    const { calls } = renderWithIpc(<ConnectionsPage />, conns.handlers);
    await screen.findByRole("table", { name: "Connections" });
    conns.changeElsewhere("glm-main", { models: ["glm-5", "glm-5-air"] });
    await user.click(screen.getByRole("button", { name: "Delete connection GLM main" }));
    await user.click(screen.getByRole("button", { name: "Delete connection" }));
    expect(
      await screen.findByText(/Changed elsewhere — reload: GLM main changed somewhere else .* so it was not deleted/),
    ).toBeInTheDocument();
    expect(conns.get("glm-main")).toBeDefined();

    await user.click(screen.getByRole("button", { name: "Reload connections" }));
    expect(await screen.findByText("Reloaded the connections. Nothing was deleted.")).toBeInTheDocument();
    expect(callsOf(calls, "connections_list")).toHaveLength(2);
    await user.click(screen.getByRole("button", { name: "Delete connection GLM main" }));
    await user.click(screen.getByRole("button", { name: "Delete connection" }));
    expect(await screen.findByText("Deleted GLM main.")).toBeInTheDocument();
    expect(callsOf(calls, "connections_delete").map((c) => c.args.expectedVersion)).toEqual([2, 3]);
    expect(conns.get("glm-main")).toBeUndefined();
  });
});

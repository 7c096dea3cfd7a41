import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc } from "../../test/harness";
import { OverviewPage } from "./OverviewPage";

describe("OverviewPage", () => {
  it("shows a loading state while the gateway status loads", () => {
    renderWithIpc(<OverviewPage />, { gateway_status: pending });
    expect(screen.getByText("Loading gateway status…")).toBeInTheDocument();
  });

  it("shows the error with a working Retry", async () => {
    let first = true;
    renderWithIpc(<OverviewPage />, {
      gateway_status: () => {
        if (first) {
          first = false;
          return Promise.reject({ code: "internal_error", message: "database is locked", issues: [] });
        }
        return f.gatewayStatus();
      },
    });
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Could not load the gateway status");
    expect(alert).toHaveTextContent("database is locked");
    await userEvent.click(within(alert).getByRole("button", { name: "Retry" }));
    expect(await screen.findByTestId("base-url")).toHaveTextContent("http://127.0.0.1:7821");
  });

  it("explains the empty key list and the absence of errors", async () => {
    renderWithIpc(<OverviewPage />);
    expect(await screen.findByText("No client keys yet")).toBeInTheDocument();
    expect(await screen.findByText("No recent errors")).toBeInTheDocument();
  });

  it("shows the base URL, keys, counts, recent errors and ready-to-paste setup", async () => {
    renderWithIpc(<OverviewPage />, {
      keys_list: () => [f.apiKey({ name: "laptop" }), f.apiKey({ id: "k2", name: "ci", scopes: ["lease:exclusive"] })],
      monitoring_summary: () =>
        f.summary({
          clientsLastHour: f.requestCounts({ requests: 42, served: 38, servedAfterFailover: 3, errors: 1 }),
          clientsLastDay: f.requestCounts({ requests: 1234, served: 1200, servedAfterFailover: 27, errors: 7 }),
          attemptsLastHour: 46,
          failedAttemptsLastHour: 4,
          attemptsLastDay: 1270,
          failedAttemptsLastDay: 43,
          recentErrors: [
            {
              id: 9,
              at: Date.now() - 60_000,
              requestId: "r1",
              apiKeyId: "k1",
              route: "/v1/messages",
              provider: "anthropic",
              connectionId: "claude-max",
              model: "claude-sonnet-4-5",
              status: 429,
              latencyMs: 310,
              bytes: 0,
              errorKind: "http_429",
              tokens: null,
            },
          ],
        }),
    });
    expect(await screen.findByTestId("base-url")).toHaveTextContent("http://127.0.0.1:7821");
    expect(screen.getByRole("button", { name: "Copy base URL" })).toBeInTheDocument();
    expect(await screen.findByRole("cell", { name: "laptop" })).toBeInTheDocument();
    expect(screen.getByRole("cell", { name: "ci" })).toBeInTheDocument();
    // What the agents saw, apart from what the gateway did upstream.
    const agents = await screen.findByRole("group", { name: "Agent requests" });
    const stat = (group: HTMLElement, label: string) =>
      within(group).getByText(label).closest(".stat") as HTMLElement;
    expect(stat(agents, "Requests, last hour")).toHaveTextContent(/^42Requests, last hour24 h: 1,234$/);
    expect(stat(agents, "Served")).toHaveTextContent(/^38Served24 h: 1,200$/);
    expect(stat(agents, "Served after failover")).toHaveTextContent(/^3Served after failover24 h: 27$/);
    expect(stat(agents, "Errors agents received")).toHaveTextContent(/^1Errors agents received24 h: 7$/);
    const upstream = screen.getByRole("group", { name: "Upstream attempts" });
    expect(stat(upstream, "Attempts, last hour")).toHaveTextContent(/^46Attempts, last hour24 h: 1,270$/);
    expect(stat(upstream, "Failed attempts")).toHaveTextContent(/^4Failed attempts24 h: 43$/);
    expect(screen.getByText(/absorbed when another connection serves the request \(3 in the last hour\)/)).toBeInTheDocument();
    const table = screen.getByRole("table", { name: "Recent errors, newest first" });
    expect(within(table).getByText("claude-max")).toBeInTheDocument();
    expect(within(table).getByText("HTTP 429")).toHaveAttribute("title", "http_429");
    expect(
      screen.getByText(
        "ANTHROPIC_BASE_URL=http://127.0.0.1:7821 ANTHROPIC_AUTH_TOKEN=YOUR_SWITCHYARD_KEY claude",
      ),
    ).toBeInTheDocument();
    expect(screen.getByText(/base_url = "http:\/\/127\.0\.0\.1:7821\/v1"/)).toBeInTheDocument();
    expect(screen.getByText(/env_key = "SWITCHYARD_API_KEY"/)).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Copy Claude Code command" })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Copy Codex config.toml" })).toBeInTheDocument();
  });

  it("counts routable connections and lists the ones out of rotation with their status", async () => {
    const status = (id: string, name: string, over: Parameters<typeof f.routability>[0] = {}) => ({
      id,
      name,
      provider: "glm",
      status: f.routability(over),
    });
    renderWithIpc(<OverviewPage />, {
      monitoring_health: () =>
        f.health({
          connectionsOutOfRotation: 1,
          activeLockouts: 1,
          connections: [
            status("glm-main", "GLM main"),
            status("glm-2", "GLM two", { ...f.breakerOpen() }),
            status("glm-3", "GLM three", {
              state: "test-failed",
              label: "Test failed",
              detail: "Its last Test failed: could not connect to the upstream. Requests still try it; fix the connection and Test again.",
            }),
            status("glm-4", "GLM four", { state: "disabled", routable: false, label: "Disabled", detail: "Switched off: never routed to." }),
          ],
        }),
    });
    const card = await screen.findByRole("region", { name: "Connections" });
    await within(card).findByText("2 routable");
    // Switched-off connections are counted apart (as the gateway's count and the tray do).
    expect(within(card).getByLabelText("Connections in rotation")).toHaveTextContent(
      "2 routable · 1 out of rotation · 1 switched off (of 4 connections)",
    );
    const items = within(within(card).getByRole("list", { name: "Connections needing attention" })).getAllByRole(
      "listitem",
    );
    // Out of rotation first, then the ones that route with a warning, then the switched-off
    // ones; plainly routable ones are not listed.
    expect(items.map((li) => li.querySelector(".badge")?.textContent)).toEqual(["Breaker open", "Test failed", "Disabled"]);
    expect(items[0]).toHaveTextContent("GLM two");
    expect(items[0]).toHaveTextContent("Provider 'glm' failed 2 times in a row");
    expect(items[0]).toHaveTextContent(/ends in (59|60|1m 00)s/);
    expect(items[1]).toHaveTextContent("could not connect to the upstream");
    expect(card).not.toHaveTextContent("GLM main");
    expect(within(card).getByRole("link", { name: "Cooldown Manager" })).toHaveAttribute("href", "#/cooldowns");
  });

  it("says every connection is in rotation only when each one routes", async () => {
    renderWithIpc(<OverviewPage />, {
      monitoring_health: () =>
        f.health({ connections: [{ id: "glm-main", name: "GLM main", provider: "glm", status: f.routability() }] }),
    });
    const card = await screen.findByRole("region", { name: "Connections" });
    expect(await within(card).findByText("Every connection is in rotation.")).toBeInTheDocument();
    expect(within(card).getByLabelText("Connections in rotation")).toHaveTextContent("1 routable · 0 out of rotation");
  });

  it("says nothing about team mode on this machine's SQLite file", async () => {
    renderWithIpc(<OverviewPage />);
    // The health document has loaded once the Connections card counts.
    const card = await screen.findByRole("region", { name: "Connections" });
    await within(card).findByText("0 routable");
    expect(screen.queryByText(/Team mode/)).not.toBeInTheDocument();
    expect(screen.queryByText(/Database/)).not.toBeInTheDocument();
    expect(screen.queryByRole("region", { name: "Database" })).not.toBeInTheDocument();
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
  });

  it("shows team mode with this replica's id and the shared database connected", async () => {
    renderWithIpc(<OverviewPage />, {
      monitoring_health: () => f.health({ databaseBackend: "postgres", database: "ok", replica: "r-7f3a9c2e1b4d" }),
    });
    const card = await screen.findByRole("region", { name: "Database" });
    expect(within(card).getByLabelText("Team mode")).toHaveTextContent(
      "Team mode — shared Postgres, replica r-7f3a9c2e1b4d",
    );
    expect(within(card).getByLabelText("Database state")).toHaveTextContent("Database: connected");
    expect(within(card).getByText("Connected")).toHaveClass("badge-ok");
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
  });

  it("warns above the cards while the shared database is unavailable", async () => {
    renderWithIpc(<OverviewPage />, {
      monitoring_health: () =>
        f.health({ databaseBackend: "postgres", database: "unavailable", replica: "r-7f3a9c2e1b4d" }),
    });
    const banner = await screen.findByRole("alert", { name: "Database unavailable" });
    expect(banner).toHaveClass("banner-warning");
    expect(banner).toHaveTextContent(
      "Database unavailable — routing on the last known state; changes made on other replicas arrive when it returns.",
    );
    const card = screen.getByRole("region", { name: "Database" });
    expect(within(card).getByLabelText("Team mode")).toHaveTextContent("replica r-7f3a9c2e1b4d");
    expect(within(card).getByLabelText("Database state")).toHaveTextContent(
      "Database unavailable — routing on the last known state",
    );
    expect(within(card).getByText("Unavailable")).toHaveClass("badge-warning");
    expect(card).not.toHaveTextContent("Database: connected");
  });

  it("creates a client key and shows its secret once, in the setup too", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<OverviewPage />, {
      keys_create: (a) => ({
        key: f.apiKey({ name: (a.request as { name: string }).name }),
        secret: "sy-secret-0123456789abcdef",
      }),
    });
    await user.type(await screen.findByLabelText("Key name"), "laptop");
    await user.click(screen.getByRole("button", { name: "Create client key" }));
    const box = await screen.findByRole("region", { name: "New client key" });
    expect(within(box).getByTestId("new-key-secret")).toHaveTextContent("sy-secret-0123456789abcdef");
    expect(within(box).getByRole("button", { name: "Copy new client key" })).toBeInTheDocument();
    expect(box).toHaveTextContent("it will not be shown again");
    expect(
      screen.getByText("ANTHROPIC_BASE_URL=http://127.0.0.1:7821 ANTHROPIC_AUTH_TOKEN=sy-secret-0123456789abcdef claude"),
    ).toBeInTheDocument();
    expect(callsOf(calls, "keys_create")[0].args).toEqual({
      request: { name: "laptop", key: null, scopes: [], allowedConnections: [] },
    });
    await user.click(within(box).getByRole("button", { name: "I have saved it" }));
    expect(screen.queryByText("sy-secret-0123456789abcdef")).not.toBeInTheDocument();
  });

  it("shows a validation issue next to the key name field", async () => {
    const user = userEvent.setup();
    renderWithIpc(<OverviewPage />, {
      keys_create: fails("validation_failed", "1 invalid field", [
        { path: "/name", message: "a key named “laptop” already exists" },
      ]),
    });
    const name = await screen.findByLabelText("Key name");
    await user.type(name, "laptop");
    await user.click(screen.getByRole("button", { name: "Create client key" }));
    await waitFor(() => expect(name).toHaveAccessibleDescription(/already exists/));
    expect(name).toHaveAttribute("aria-invalid", "true");
    expect(name).toHaveValue("laptop");
  });

  it("pauses and resumes routing", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<OverviewPage />, { gateway_status: () => f.gatewayStatus({ paused: true }) });
    const banner = await screen.findByRole("region", { name: "Routing paused" });
    await user.click(within(banner).getByRole("button", { name: "Resume routing" }));
    await waitFor(() => expect(callsOf(calls, "gateway_set_paused")[0]?.args).toEqual({ request: { paused: false } }));
    expect(await screen.findByRole("button", { name: "Pause routing" })).toBeInTheDocument();
    expect(screen.queryByRole("region", { name: "Routing paused" })).not.toBeInTheDocument();
  });

  it("points to Preferences for the desktop app's settings", async () => {
    renderWithIpc(<OverviewPage />);
    const card = await screen.findByRole("region", { name: "Desktop app" });
    expect(within(card).getByRole("link", { name: "Preferences" })).toHaveAttribute("href", "#/preferences");
  });

  it("sets up Claude Code in one click, says where its old file is kept, and undoes it", async () => {
    const user = userEvent.setup();
    let configured = false;
    const { calls } = renderWithIpc(<OverviewPage />, {
      setup_list: () => [
        { agent: "claude-code", path: "/home/u/.claude/settings.json", configured },
        { agent: "codex", path: "/home/u/.codex/config.toml", configured: false },
      ],
      setup_apply: (a) => {
        configured = true;
        return {
          agent: a.agent,
          path: "/home/u/.claude/settings.json",
          backupPath: "/data/setup/claude-code.bak",
          baseUrl: "http://127.0.0.1:7821",
          keyName: "claude-code",
        };
      },
      setup_undo: (a) => {
        configured = false;
        return { agent: a.agent, path: "/home/u/.claude/settings.json", restored: true };
      },
    });
    const list = await screen.findByRole("list", { name: "Agent setup" });
    expect(list).toHaveTextContent("/home/u/.codex/config.toml");
    expect(within(list).queryByRole("button", { name: /^Undo/ })).not.toBeInTheDocument();
    await user.click(within(list).getByRole("button", { name: "Set up Claude Code" }));
    expect(
      await screen.findByText(/Claude Code now uses http:\/\/127\.0\.0\.1:7821 with the client key “claude-code”\. Its previous file is kept in \/data\/setup\/claude-code\.bak/),
    ).toBeInTheDocument();
    expect(callsOf(calls, "setup_apply")[0].args).toEqual({ agent: "claude-code" });
    await user.click(await within(list).findByRole("button", { name: "Undo the setup of Claude Code" }));
    expect(await screen.findByText("Put /home/u/.claude/settings.json back as it was before setup.")).toBeInTheDocument();
    expect(callsOf(calls, "setup_undo")[0].args).toEqual({ agent: "claude-code", force: false });
    await waitFor(() =>
      expect(within(list).queryByRole("button", { name: "Undo the setup of Claude Code" })).not.toBeInTheDocument(),
    );
  });

  it("says why a setup or an undo was refused and offers Undo anyway for a file edited since", async () => {
    const user = userEvent.setup();
    let forced = false;
    const { calls } = renderWithIpc(<OverviewPage />, {
      setup_list: () => [
        { agent: "claude-code", path: "/home/u/.claude/settings.json", configured: true },
        { agent: "codex", path: "/home/u/.codex/config.toml", configured: false },
      ],
      setup_apply: fails("conflict", "/home/u/.codex/config.toml is not valid TOML (line 3): fix or move it first"),
      setup_undo: (a) => {
        if (!a.force) {
          return Promise.reject({
            code: "conflict",
            message: "/home/u/.claude/settings.json was edited after setup; undoing would lose those edits",
            issues: [],
          });
        }
        forced = true;
        return { agent: a.agent, path: "/home/u/.claude/settings.json", restored: false };
      },
    });
    const list = await screen.findByRole("list", { name: "Agent setup" });
    await user.click(within(list).getByRole("button", { name: "Set up Codex" }));
    expect(
      await screen.findByText("Could not set up Codex: /home/u/.codex/config.toml is not valid TOML (line 3): fix or move it first."),
    ).toBeInTheDocument();
    await user.click(within(list).getByRole("button", { name: "Undo the setup of Claude Code" }));
    expect(await screen.findByText(/was edited after setup; undoing would lose those edits/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Undo the setup of Claude Code anyway" }));
    expect(await screen.findByText("Removed /home/u/.claude/settings.json: it did not exist before setup.")).toBeInTheDocument();
    expect(forced).toBe(true);
    expect(callsOf(calls, "setup_undo").map((c) => c.args.force)).toEqual([false, true]);
  });
});

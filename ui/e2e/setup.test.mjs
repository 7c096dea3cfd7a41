// Real-browser end-to-end test of one-click agent setup and the Claude Code login
// import. The gateway runs with HOME set to a temp dir (it reads the agents' files and
// Claude Code's login from there). "Set up Claude Code" writes the gateway's URL and a
// client key of its own into ~/.claude/settings.json, keeping what was there; that
// key is a working client key (a /v1/messages through it reaches the fake upstream);
// Undo puts the file back byte for byte. "Import Claude Code login" turns a
// ~/.claude/.credentials.json into a Claude subscription connection on Connections.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MODEL, openRoute, SCREENSHOT_DIR, startStack, waitFor } from "./harness.mjs";

/** What the user had in Claude Code's settings before setup (odd spacing on purpose). */
const ORIGINAL_SETTINGS = `{
  "model": "opus",
    "env": { "DISABLE_TELEMETRY": "1" },
  "permissions": {"allow": ["Bash(ls:*)"]}
}
`;

const CREDENTIALS = {
  claudeAiOauth: {
    accessToken: "sk-ant-oat01-x",
    refreshToken: "sk-ant-ort01-y",
    expiresAt: 1900000000000,
    subscriptionType: "max",
  },
};

describe("agent setup and the Claude Code login import in a real browser", { timeout: 90_000 }, () => {
  let home;
  let settingsPath;
  let stack;
  let gw;
  let page;
  let problems;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "switchyard-e2e-home-"));
    mkdirSync(join(home, ".claude"));
    settingsPath = join(home, ".claude", "settings.json");
    writeFileSync(settingsPath, ORIGINAL_SETTINGS);
    stack = await startStack({ env: { HOME: home } });
    ({ gw, page, problems } = stack);
  });

  after(async () => {
    await stack?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("Set up Claude Code points it at the gateway with a working key; Undo restores the file byte for byte", async () => {
    const listed = await gw.get("/api/setup");
    const claude = listed.find((a) => a.agent === "claude-code");
    assert.deepEqual([claude?.path, claude?.configured], [settingsPath, false]);

    await openRoute(page, gw.baseUrl, "overview", "Overview");
    const setup = page.getByRole("list", { name: "Agent setup" });
    await setup.getByText(settingsPath).waitFor();
    await setup.getByRole("button", { name: "Set up Claude Code" }).click();
    await setup
      .getByRole("status")
      .filter({ hasText: `Claude Code now uses ${gw.baseUrl}` })
      .waitFor();

    const written = JSON.parse(readFileSync(settingsPath, "utf8"));
    assert.equal(written.env?.ANTHROPIC_BASE_URL, gw.baseUrl);
    const token = written.env?.ANTHROPIC_AUTH_TOKEN;
    assert.ok(typeof token === "string" && token.length > 10, "a client key is written");
    // What the user had is kept.
    assert.equal(written.model, "opus");
    assert.equal(written.env?.DISABLE_TELEMETRY, "1");
    assert.deepEqual(written.permissions, { allow: ["Bash(ls:*)"] });

    // The key works, as Claude Code sends it (a bearer token), through to the fake upstream.
    const res = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content: "hi from setup" }] }),
    });
    const body = await res.json().catch(() => null);
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(res.headers.get("x-switchyard-connection"), "claude-a");
    assert.equal(await stack.fake.calls(), 1, "the request reached the fake upstream");

    await setup.getByRole("button", { name: "Undo the setup of Claude Code" }).waitFor();
    await page.screenshot({ path: join(SCREENSHOT_DIR, "setup.png"), fullPage: false });
    await setup.getByRole("button", { name: "Undo the setup of Claude Code" }).click();
    await setup
      .getByRole("status")
      .filter({ hasText: `Put ${settingsPath} back as it was before setup.` })
      .waitFor();
    assert.equal(readFileSync(settingsPath, "utf8"), ORIGINAL_SETTINGS);
    await waitFor(async () => (await setup.getByRole("button", { name: "Undo the setup of Claude Code" }).count()) === 0, {
      what: "the Undo button to go",
    });
    assert.equal((await gw.get("/api/setup")).find((a) => a.agent === "claude-code")?.configured, false);
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });

  test("Import Claude Code login adds the subscription connection, shown on Connections", async () => {
    writeFileSync(join(home, ".claude", ".credentials.json"), JSON.stringify(CREDENTIALS));
    await openRoute(page, gw.baseUrl, "connections", "Connections");
    await page.getByRole("button", { name: "Import Claude Code login" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /^Imported your Claude Code login as .+ \(max subscription\)\. Its access token expires / })
      .waitFor();
    const created = (await gw.get("/api/providers")).find((c) => c.id === "claude-login");
    assert.ok(created, "the connection exists");
    assert.deepEqual([created.authKind, created.tokenExpiresAt, created.hasRefreshToken], ["oauth", 1900000000000, true]);
    const row = page
      .getByRole("table", { name: "Connections" })
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: created.id }) });
    await row.getByText(/^Token expires in /).waitFor();
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

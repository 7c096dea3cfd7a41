// Real-app end-to-end test of the desktop build (issue 5): the built
// `switchyard-desktop` binary (UI embedded) runs in its own WebKitGTK webview,
// driven through tauri-driver + Debian's WebKitWebDriver, under Xvfb.
//
//   xvfb-run -a dbus-run-session -- node --test src-tauri/e2e/
//
// Needs: `cargo build -p switchyard-desktop --features custom-protocol` (after
// `npm run ui:build`), the `fake-upstream` binary, `tauri-driver` on PATH (or
// TAURI_DRIVER), `WebKitWebDriver`. Loopback only.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { remote } from "webdriverio";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const targetDir = path.resolve(root, process.env.CARGO_TARGET_DIR || "target");
const appBin = process.env.SWITCHYARD_DESKTOP_BIN || path.join(targetDir, "debug", "switchyard-desktop");
const fakeBin = process.env.FAKE_UPSTREAM_BIN || path.join(targetDir, "debug", "fake-upstream");
const driverBin = process.env.TAURI_DRIVER || "tauri-driver";

const TOKEN = "sym-desktop-e2e-token";
const CLIENT_KEY = "sy-desktop-e2e-client-0001";
const children = [];
let browser;
let gatewayUrl;
let work;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Spawns a child in its own process group (so cleanup takes its children too). */
function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"],
    detached: true,
  });
  children.push(child);
  return child;
}

/** The first stdout line matching `re`. */
async function lineMatching(child, re) {
  let buffer = "";
  for await (const chunk of child.stdout) {
    buffer += chunk.toString();
    const m = buffer.match(re);
    if (m) return m;
  }
  throw new Error(`process ended before printing ${re}`);
}

async function waitFor(what, fn, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

async function api(method, urlPath, body) {
  const response = await fetch(gatewayUrl + urlPath, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), "switchyard-desktop-e2e-"));
  const fake = start(fakeBin, []);
  const [, upstreamUrl] = await lineMatching(fake, /listening on (http:\/\/[0-9.:]+)/);
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  const config = path.join(work, "switchyard.toml");
  writeFileSync(
    config,
    `[[api_keys]]
name = "ide"
key = "${CLIENT_KEY}"

[[connections]]
id = "claude-a"
provider = "anthropic"
name = "Claude A"
auth = "oauth"
access_token = "oat-a"
base_url = "${upstreamUrl}"
[connections.provider_specific]
lowPriorityMode = false
autoLimitReset = false
`,
  );
  // tauri-driver starts the app with its own environment: the app's gateway data,
  // config, token and port come from here; the store file goes to a private
  // config home so the test never touches the user's preferences.
  const driverPort = await freePort();
  start(driverBin, ["--port", String(driverPort)], {
    SWITCHYARD_DATA_DIR: path.join(work, "data"),
    SWITCHYARD_CONFIG: config,
    SWITCHYARD_MANAGEMENT_TOKEN: TOKEN,
    SWITCHYARD_PORT: String(port),
    XDG_CONFIG_HOME: path.join(work, "config"),
    XDG_DATA_HOME: path.join(work, "share"),
  });
  await waitFor("tauri-driver", async () => {
    const r = await fetch(`http://127.0.0.1:${driverPort}/status`);
    return r.ok;
  });
  browser = await remote({
    hostname: "127.0.0.1",
    port: driverPort,
    logLevel: "warn",
    capabilities: {
      browserName: "wry",
      "wdio:enforceWebDriverClassic": true,
      "tauri:options": { application: appBin },
    },
  });
});

after(async () => {
  await browser?.deleteSession().catch(() => {});
  for (const child of children.reverse()) {
    // Negative pid: the whole group (tauri-driver's WebKitWebDriver child too).
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

async function openPage(label, heading) {
  const link = await browser.$(`//nav[@aria-label="Pages"]//a[normalize-space()="${label}"]`);
  await link.waitForClickable({ timeout: 15000 });
  await link.click();
  const h1 = await browser.$(`//main//h1[normalize-space()="${heading}"]`);
  await h1.waitForDisplayed({ timeout: 15000 });
}

test("the window opens with the settings UI", async () => {
  assert.equal(await browser.getTitle(), "Switchyard");
  await waitFor("the app's gateway", async () => (await api("GET", "/api/gateway")).status === 200);
});

test("every page renders over IPC", async () => {
  await openPage("Overview", "Overview");
  // Data that can only have come through IPC from the hosted gateway.
  await (await browser.$(`//*[contains(., "${gatewayUrl}")]`)).waitForExist({ timeout: 15000 });
  await openPage("Connections", "Connections");
  await (await browser.$('//table//code[normalize-space()="claude-a"]')).waitForExist({ timeout: 15000 });
  await openPage("Resilience", "Resilience");
  await (await browser.$('[data-path="/connectionCooldown/oauth/baseCooldownMs"]')).waitForExist({ timeout: 15000 });
  await openPage("Model Lockout", "Model Lockout");
  await openPage("Cooldown Manager", "Cooldown Manager");
  const errors = await browser.$$('[role="alert"]');
  for (const e of errors) {
    const text = await e.getText();
    assert.ok(!/gateway_unavailable|not running/i.test(text), `error on a page: ${text}`);
  }
});

test("switching on lowPriorityMode in the Claude form is visible through the REST API", async () => {
  await openPage("Connections", "Connections");
  const edit = await browser.$('[aria-label="Edit connection Claude A"]');
  await edit.waitForClickable({ timeout: 15000 });
  await edit.click();
  const label = await browser.$('//section[@aria-label="Claude options"]//label[normalize-space()="Low-priority lane (lowPriorityMode)"]');
  await label.waitForClickable({ timeout: 15000 });
  await label.click();
  const save = await browser.$('//button[@type="submit" and normalize-space()="Save"]');
  await save.click();
  const stored = await waitFor("lowPriorityMode stored", async () => {
    const r = await api("GET", "/api/providers/claude-a");
    return r.body?.providerSpecific?.lowPriorityMode === true ? r.body : null;
  });
  assert.equal(stored.providerSpecific.autoLimitReset, false, "only the switched option changed");
});

test("a request to the gateway the app hosts is served by the fake upstream", async () => {
  const response = await fetch(`${gatewayUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": CLIENT_KEY, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-sonnet-4-6", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.type, "message");
  // The request log is written in batches: wait for the row.
  const row = await waitFor("the request-log row", async () => (await api("GET", "/api/logs?limit=1")).body?.[0]);
  assert.equal(row.connectionId, "claude-a");
  assert.equal(row.status, 200);
});

// Real-app end-to-end test of the desktop build (issue 5): the built
// `switchyard-desktop` binary (UI embedded) runs in its own WebKitGTK webview,
// driven through tauri-driver + Debian's WebKitWebDriver, under Xvfb.
//
//   xvfb-run -a dbus-run-session -- node --test --test-concurrency=1 src-tauri/e2e/
//
// Needs: `cargo build -p switchyard-desktop --features custom-protocol` (after
// `npm run ui:build`), the `fake-upstream` binary, `tauri-driver` on PATH (or
// TAURI_DRIVER), `WebKitWebDriver`. Loopback only.
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  appBin,
  appPid,
  codeMappings,
  fakeBin,
  freePort,
  hugePagesOn,
  launchApp,
  lineMatching,
  start,
  stopAll,
  threadNames,
  waitFor,
  webProcesses,
} from "./harness.mjs";

const TOKEN = "sym-desktop-e2e-token";
const CLIENT_KEY = "sy-desktop-e2e-client-0001";
let browser;
let gatewayUrl;
let work;
let appEnv;
let port;

/** A management call to the gateway the app hosts. */
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
  port = await freePort();
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
  // The app inherits tauri-driver's environment: its gateway data, config, token
  // and port come from here; the store file goes to a private config home so the
  // test never touches the user's preferences.
  appEnv = {
    SWITCHYARD_DATA_DIR: path.join(work, "data"),
    SWITCHYARD_CONFIG: config,
    SWITCHYARD_MANAGEMENT_TOKEN: TOKEN,
    SWITCHYARD_PORT: String(port),
    XDG_CONFIG_HOME: path.join(work, "config"),
    XDG_DATA_HOME: path.join(work, "share"),
  };
  browser = await launchApp(appEnv);
});

after(async () => {
  await stopAll(browser);
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

test("the hosted gateway's hot code runs from huge pages, as in switchyard serve", async () => {
  const pid = await waitFor("the app's process", async () => appPid(`SWITCHYARD_PORT=${port}`));
  const code = codeMappings(pid);
  const moved = code.filter((m) => m.anonymous);
  assert.ok(code.some((m) => !m.anonymous), "the binary's own code is there");
  if (!hugePagesOn()) {
    assert.deepEqual(moved, [], "no huge pages on this machine: nothing moved");
    return;
  }
  // The chunk holding the request path and the one holding jemalloc's slow paths
  // (one chunk when they share it), each one whole 2 MB page at a 2 MB boundary.
  assert.ok(moved.length >= 1 && moved.length <= 2, JSON.stringify(code));
  for (const m of moved) {
    assert.equal(m.end - m.start, 2 << 20, JSON.stringify(m));
    assert.equal(m.start % (2 << 20), 0, JSON.stringify(m));
    assert.equal(m.hugeKb, 2048, JSON.stringify(m));
  }
});

/** Launches the app again: it hands over to the running one (which shows its window) and exits. */
async function secondLaunch() {
  const second = spawn(appBin, [], { env: { ...process.env, ...appEnv }, stdio: "ignore" });
  const code = await Promise.race([
    new Promise((resolve) => second.once("exit", (c) => resolve(c))),
    new Promise((resolve) => setTimeout(() => resolve("still running"), 20000)),
  ]);
  if (code === "still running") second.kill("SIGKILL");
  return code;
}

test("a second launch hands over to the running app and exits", async () => {
  // Without single-instance the second copy would meet its own port taken and stay
  // up with an error window; with it, it signals the first (which shows its window)
  // and exits at once.
  const code = await secondLaunch();
  assert.equal(code, 0, "the second launch should exit");
  assert.equal((await api("GET", "/api/gateway")).status, 200, "the first app still serves");
  assert.match(await browser.getTitle(), /Switchyard$/, "the first window is still there");
});

test("single instance's session-bus connection leaves no thread polling the idle app", async () => {
  // zbus on async-io connected through the `blocking` crate's pool, whose idle
  // thread woke every 500 ms for good, and ran an async-io reactor thread; on
  // tokio (src-tauri/Cargo.toml) neither exists. The second launch above has used
  // the connection, so it is up.
  const pid = await waitFor("the app's process", async () => appPid(`SWITCHYARD_PORT=${port}`));
  const names = threadNames(pid);
  assert.ok(names.includes("switchyard-lane"), names.join(", "));
  assert.deepEqual(names.filter((n) => /^blocking-|^async-io/.test(n)), [], names.join(", "));
});

/** Ctrl+W. When it destroys the window, the key's release has no window left to go to. */
async function pressCtrlW() {
  try {
    await browser.keys(["Control", "w"]);
  } catch (e) {
    if (e.name !== "no such window") throw e;
  }
}

// Last: it ends with the session's first window destroyed.
test("closing the window keeps it hidden while a draft is unsaved, and otherwise frees its webview until it is opened again, on the same page", async () => {
  const pid = await waitFor("the app's process", async () => appPid(`SWITCHYARD_PORT=${port}`));
  const first = webProcesses(pid);
  assert.equal(first.length, 1, "one web process for the open window");
  const visibility = () => browser.execute(() => document.visibilityState);

  // A draft: Ctrl+W hides the window and keeps its page (and web process).
  await openPage("Resilience", "Resilience");
  const input = await browser.$('[data-path="/sessionAffinityTtlMs"]');
  await input.waitForDisplayed({ timeout: 15000 });
  await input.clearValue();
  await input.addValue("120000");
  await pressCtrlW();
  await waitFor("the window hidden", async () => (await visibility()) === "hidden");
  assert.deepEqual(webProcesses(pid), first, "the page lives on while hidden");
  assert.equal(await secondLaunch(), 0);
  await waitFor("the window shown again", async () => (await visibility()) === "visible");
  assert.equal(await input.getValue(), "120000", "the draft survived the close");

  // No draft: Ctrl+W destroys the window; its web process ends, the gateway serves on.
  const discard = await browser.$('//button[normalize-space()="Discard changes"]');
  await discard.click();
  await pressCtrlW();
  await waitFor("the web process to end", async () => webProcesses(pid).length === 0);
  assert.equal((await api("GET", "/api/gateway")).status, 200, "the app and its gateway run on in the tray");

  // Opening it again (here a second launch; the tray's Open does the same) makes a new one.
  assert.equal(await secondLaunch(), 0);
  const next = await waitFor("a new web process", async () => {
    const now = webProcesses(pid);
    return now.length === 1 && now[0] !== first[0] ? now : null;
  });
  assert.notDeepEqual(next, first);
  // It opens on the page it was closed on.
  const reopened = await waitFor("the new window in the session", async () => {
    const handles = await browser.getWindowHandles();
    return handles.length > 0 ? handles[handles.length - 1] : null;
  });
  await browser.switchToWindow(reopened);
  const h1 = await browser.$('//main//h1[normalize-space()="Resilience"]');
  await h1.waitForDisplayed({ timeout: 15000 });
  assert.match(await browser.getUrl(), /#\/resilience$/);
});

// Real-app e2e: a taken port is a message in the window, not a crash (issue 5), and
// the banner leads to Preferences, which work without the gateway: the saved port
// there, and beside it the port in force from SWITCHYARD_PORT.
//
//   xvfb-run -a dbus-run-session -- node --test --test-concurrency=1 src-tauri/e2e/
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { appPid, codeMappings, freePort, launchApp, stopAll, waitFor } from "./harness.mjs";

let browser;
let work;
let squatter;
let port;

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), "switchyard-port-taken-"));
  port = await freePort();
  // Another program holds the port before the app starts.
  squatter = net.createServer();
  await new Promise((resolve) => squatter.listen(port, "127.0.0.1", resolve));
  browser = await launchApp({
    SWITCHYARD_DATA_DIR: path.join(work, "data"),
    SWITCHYARD_MANAGEMENT_TOKEN: "sym-port-taken",
    SWITCHYARD_PORT: String(port),
    // The switch that keeps the code file-backed (desktop.test.mjs sees it moved).
    SWITCHYARD_HUGE_TEXT: "false",
    XDG_CONFIG_HOME: path.join(work, "config"),
    XDG_DATA_HOME: path.join(work, "share"),
  });
});

after(async () => {
  await stopAll(browser);
  squatter?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the window opens and says the port is in use", async () => {
  assert.equal(await browser.getTitle(), "Switchyard");
  const banner = await browser.$('[role="alert"]');
  await banner.waitForDisplayed({ timeout: 20000 });
  const text = await banner.getText();
  assert.match(text, new RegExp(`Gateway not running: port ${port} is already in use`));
});

test("SWITCHYARD_HUGE_TEXT=false leaves all the app's code file-backed", async () => {
  const pid = await waitFor("the app's process", async () => appPid(`SWITCHYARD_PORT=${port}`));
  const code = codeMappings(pid);
  assert.ok(code.length > 0, "the binary's own code is there");
  assert.deepEqual(code.filter((m) => m.anonymous), [], JSON.stringify(code));
});

test("pages explain the gateway is unavailable instead of hanging", async () => {
  const link = await browser.$('//nav[@aria-label="Pages"]//a[normalize-space()="Connections"]');
  await link.click();
  await browser.waitUntil(
    async () => (await browser.$$("//main//*[contains(., 'already in use')]")).length > 0,
    { timeout: 15000, timeoutMsg: "no page-level error naming the taken port" },
  );
});

test("the banner leads to Preferences: the saved port, and SWITCHYARD_PORT's beside it", async () => {
  const open = await browser.$('//*[@role="alert"]//a[normalize-space()="Open Preferences"]');
  await open.waitForDisplayed({ timeout: 15000 });
  await open.click();
  const heading = await browser.$('//main//h1[normalize-space()="Preferences"]');
  await heading.waitForDisplayed({ timeout: 15000 });
  const field = await browser.$("#pref-port");
  await field.waitForDisplayed({ timeout: 15000 });
  const saved = await field.getValue();
  assert.match(saved, /^\d+$/, "the port field shows the saved preference");
  assert.notEqual(Number(saved), port, "the preference is not the SWITCHYARD_PORT override");
  const note = await browser.$(".port-in-force");
  await note.waitForDisplayed({ timeout: 15000 });
  assert.equal(
    await note.getText(),
    `Tried to start on ${port} (from SWITCHYARD_PORT, which overrides this setting).`,
  );
  // The nav lists the page in the desktop app.
  const navLink = await browser.$('//nav[@aria-label="Pages"]//a[normalize-space()="Preferences"]');
  assert.equal(await navLink.getAttribute("aria-current"), "page");
});

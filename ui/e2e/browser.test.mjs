// Real-browser end-to-end test of the settings UI: a real `switchyard serve` serving
// the built UI, a fake upstream provider, headless chromium driven by playwright-core.
// Every step is checked twice: on the page and through the REST API.
//
// Run: cargo build -p switchyard-gateway -p switchyard-testkit --bins
//      npm run ui:build && npm run ui:e2e      (or: node --test ui/e2e/)
// The tests share one gateway and run in order; screenshots go to docs/screenshots/.
// E2E_VERBOSE=1 prints the gateway's and the fake upstream's output at the end.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { MODEL, SCREENSHOT_DIR, startStack, waitFor } from "./harness.mjs";

const anthropicError = (type, message) => ({ type: "error", error: { type, message } });

describe("settings UI in a real browser", { timeout: 90_000 }, () => {
  let stack;
  let fake;
  let gw;
  let page;
  /** Page errors, console errors and failed HTTP calls seen by the browser. */
  let problems;

  before(async () => {
    // The token is taken out of the URL and kept for the session.
    stack = await startStack();
    ({ fake, gw, page, problems } = stack);
  });

  after(() => stack?.stop());

  /** Opens a page through the hash router and waits for its heading. */
  async function open(route, heading) {
    await page.goto(`${gw.baseUrl}/ui/#/${route}`);
    const h1 = page.getByRole("heading", { level: 1, name: heading });
    await h1.waitFor();
    // A hash change keeps the document, and with it the previous page's scroll.
    await h1.evaluate((el) => {
      for (let n = el; n; n = n.parentElement) n.scrollTop = 0;
      window.scrollTo(0, 0);
    });
  }

  async function screenshot(name) {
    await page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: false });
  }

  /** The edit form of a connection, opened from its row. */
  async function openEditForm(name) {
    await page.getByRole("button", { name: `Edit connection ${name}` }).click();
    const form = page.getByRole("region", { name: `Edit ${name}` });
    await form.waitFor();
    return form;
  }

  test("Connections: the Claude switches are saved and survive a reload", async () => {
    const initial = await gw.get("/api/providers/claude-a");
    assert.equal(initial.providerSpecific?.lowPriorityMode ?? false, false);
    assert.equal(initial.providerSpecific?.autoLimitReset ?? false, false);

    await open("connections", "Connections");
    let form = await openEditForm("claude-a");
    let claude = form.getByRole("region", { name: "Claude options" });
    const lowPriority = claude.getByRole("switch", { name: "Low-priority lane (lowPriorityMode)" });
    const autoReset = claude.getByRole("switch", { name: "Automatic limit reset (autoLimitReset)" });
    assert.equal(await lowPriority.isChecked(), false);
    assert.equal(await autoReset.isChecked(), false);
    await lowPriority.check();
    await autoReset.check();
    await form.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Saved claude-a." }).waitFor();

    const saved = await gw.get("/api/providers/claude-a");
    assert.equal(saved.providerSpecific.lowPriorityMode, true);
    assert.equal(saved.providerSpecific.autoLimitReset, true);

    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    form = await openEditForm("claude-a");
    claude = form.getByRole("region", { name: "Claude options" });
    await waitFor(
      async () =>
        (await claude.getByRole("switch", { name: "Low-priority lane (lowPriorityMode)" }).isChecked()) &&
        (await claude.getByRole("switch", { name: "Automatic limit reset (autoLimitReset)" }).isChecked()),
      { what: "both Claude switches to be on after the reload" },
    );
    // connections.png is taken by status.test.mjs (statuses and usage on the list).
    await form.getByRole("button", { name: "Cancel" }).click();
  });

  test("Resilience: an out-of-range value shows the server's message and stores nothing", async () => {
    const path = "/connectionCooldown/oauth/baseCooldownMs";
    const stored = await gw.get("/api/resilience");
    // What the server says about this value (nothing is stored on a rejected write).
    const rejected = await gw.api("PATCH", "/api/resilience", {
      connectionCooldown: { oauth: { baseCooldownMs: 999999999 } },
    });
    assert.equal(rejected.status, 400);
    const issue = rejected.body.error?.issues?.find((i) => i.path === path);
    assert.ok(issue, `the 400 names ${path}: ${JSON.stringify(rejected.body)}`);

    await open("resilience", "Resilience");
    const input = page.locator(`input[data-path="${path}"]`);
    await input.first().waitFor();
    assert.equal(await input.count(), 1, `one field with data-path=${path}`);
    const field = page.locator(".field", { has: input });
    const card = page.locator("form", { has: input });
    await input.fill("999999999");
    await card.getByRole("button", { name: /^Save/ }).click();

    const error = field.locator(".field-error");
    await error.waitFor();
    assert.ok((await error.innerText()).includes(issue.message), `field error shows "${issue.message}"`);
    assert.equal(await input.getAttribute("aria-invalid"), "true");
    const range = await field.locator(".field-range").innerText();
    assert.match(range, /0.600,000 ms/, `range text "${range}"`);
    assert.equal(await input.inputValue(), "999999999", "the rejected input stays visible");
    await screenshot("resilience.png");

    assert.deepEqual(await gw.get("/api/resilience"), stored);
  });

  test("Resilience: a value changed elsewhere while it is edited is not overwritten; Reload keeps the edit", async () => {
    const path = "/sessionAffinityTtlMs";
    await open("resilience", "Resilience");
    const input = page.locator(`input[data-path="${path}"]`);
    await input.waitFor();
    const card = page.getByRole("region", { name: "Session affinity" });
    await input.fill("120000");
    // Another client saves the same field first (without If-Match: applied as sent).
    const elsewhere = await gw.api("PATCH", "/api/resilience", { sessionAffinityTtlMs: 240000 });
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));

    // The page's save names the version it loaded: the gateway refuses it (412).
    await card.getByRole("button", { name: /^Save/ }).click();
    const alert = card.getByRole("alert").filter({ hasText: "Changed elsewhere — reload" });
    await alert.waitFor();
    assert.equal((await gw.get("/api/resilience")).sessionAffinityTtlMs, 240000, "nothing was overwritten");
    assert.equal(await input.inputValue(), "120000", "the edit stays in the form");

    // Reload keeps the edit over the current settings; the next save names their version.
    await alert.getByRole("button", { name: /^Reload/ }).click();
    await card.getByRole("status").filter({ hasText: "Your edits are kept" }).waitFor();
    assert.equal(await input.inputValue(), "120000");
    await card.getByRole("button", { name: /^Save/ }).click();
    await card.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    const saved = await gw.get("/api/resilience");
    assert.equal(saved.sessionAffinityTtlMs, 120000);
    assert.equal(saved.version, elsewhere.body.version + 1, "saved once, on top of the other change");
  });

  test("Cooldown Manager: a 429 cools claude-a, the countdown ticks, Clear puts it back", async () => {
    await fake.push({
      status: 429,
      headers: { "retry-after": "120" },
      body: anthropicError("rate_limit_error", "Number of requests has exceeded your rate limit."),
    });
    const served = await gw.message();
    assert.equal(served.status, 200, `key-b serves after claude-a's 429: ${JSON.stringify(served.body)}`);
    const cooled = (await gw.get("/api/resilience/cooldowns")).find((c) => c.connection === "claude-a");
    assert.equal(cooled?.status, "unavailable", JSON.stringify(cooled));

    // The first Resilience test left its rejected value unsaved: leaving the page asks.
    const asked = new Promise((resolve) =>
      page.once("dialog", (dialog) => {
        resolve(dialog.message());
        void dialog.accept();
      }),
    );
    await open("cooldowns", "Cooldown Manager");
    assert.match(await asked, /^You have unsaved changes \(.+\)\. Leave this page and lose them\?$/);
    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "claude-a", exact: true }) });
    const countdown = row.locator("time.countdown");
    await countdown.waitFor();
    const first = await countdown.innerText();
    assert.match(first, /\d/, `countdown text "${first}"`);
    await screenshot("cooldowns.png");
    // The one deliberate wait: the countdown must tick on its own.
    await new Promise((r) => setTimeout(r, 2_200));
    const second = await countdown.innerText();
    assert.notEqual(second, first, "the countdown ticks");

    await page.getByRole("button", { name: "Clear cooldown of claude-a" }).click();
    const status = page.getByRole("status").filter({ hasText: /^Cleared \d+/ });
    await status.waitFor();
    assert.match(await status.innerText(), /Cleared 1, unchanged 0, skipped terminal 0, lockouts cleared \d+\./);
    await row.waitFor({ state: "detached" });

    const cleared = (await gw.get("/api/resilience/cooldowns")).find((c) => c.connection === "claude-a");
    assert.equal(cleared?.status, "active", JSON.stringify(cleared));
    const calls = await fake.calls();
    const again = await gw.message();
    assert.equal(again.status, 200);
    assert.equal(await fake.calls(), calls + 1, "one upstream call");
    // The request log is written off the request path: poll for the newest row.
    await waitFor(async () => (await gw.get("/api/logs?limit=1"))[0]?.connectionId === "claude-a", {
      what: "the newest log row to name claude-a",
    });
  });

  test("Model Lockout: a 503 locks the model, Re-enable removes the lockout", async () => {
    const enabled = await gw.api("PATCH", "/api/resilience/model-lockout", { enabled: true });
    assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
    await fake.push({ status: 503, body: anthropicError("overloaded_error", "Overloaded") });
    const served = await gw.message();
    assert.equal(served.status, 200, `key-b serves after claude-a's 503: ${JSON.stringify(served.body)}`);
    const locks = await gw.get("/api/resilience/model-cooldowns");
    assert.ok(
      locks.some((l) => l.connection === "claude-a" && l.model === MODEL),
      `claude-a/${MODEL} is locked: ${JSON.stringify(locks)}`,
    );

    await open("model-lockout", "Model Lockout");
    const reEnable = page.getByRole("button", { name: `Re-enable ${MODEL} on claude-a` });
    await reEnable.waitFor();
    await screenshot("model-lockout.png");
    await reEnable.click();
    await reEnable.waitFor({ state: "detached" });
    await page.getByText("No active model lockouts").waitFor();
    assert.deepEqual(await gw.get("/api/resilience/model-cooldowns"), []);
  });

  test("Overview: base URL, setup and request counts", async () => {
    const status = await gw.get("/api/gateway");
    const summary = await gw.get("/api/monitoring/summary");
    // Client requests as the agents saw them (attempts are counted apart).
    const requestsLastHour = summary.clientsLastHour.requests;
    assert.equal(requestsLastHour, 3, JSON.stringify(summary));
    assert.ok(summary.attemptsLastHour > requestsLastHour, `failovers took extra attempts: ${JSON.stringify(summary)}`);

    await open("overview", "Overview");
    await waitFor(async () => (await page.getByTestId("base-url").innerText()) === status.baseUrl, {
      what: `the base URL ${status.baseUrl}`,
    });
    const setup = page.getByRole("region", { name: "Connect your agents" });
    await setup.getByText(`ANTHROPIC_BASE_URL=${status.baseUrl}`).waitFor();
    await setup.getByText(`base_url = "${status.baseUrl}/v1"`).waitFor();
    const stat = (group, label) =>
      page.getByRole("group", { name: group }).locator(".stat", { hasText: label }).locator(".stat-value");
    const digits = async (locator) => (await locator.innerText()).replace(/\D/g, "");
    await waitFor(async () => (await digits(stat("Agent requests", "Requests, last hour"))) === String(requestsLastHour), {
      what: `"Requests, last hour" to read ${requestsLastHour}`,
    });
    assert.equal(await digits(stat("Upstream attempts", "Attempts, last hour")), String(summary.attemptsLastHour));
    // overview.png is taken by status.test.mjs (the connections card with statuses).
    // The failed calls expected: the rejected save of the Resilience test, and the save
    // refused as stale (412) of the changed-elsewhere test.
    assert.deepEqual(
      problems,
      ["PATCH /api/resilience → 400", "PATCH /api/resilience → 412"],
      "no other page errors or failed calls",
    );
  });
});

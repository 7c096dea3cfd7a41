// Real-browser end-to-end test of honest status and the request log: a failed-over
// request on the Requests page with both attempts and why; Claude usage windows read
// from real-shaped `anthropic-ratelimit-unified-*` headers on the connection row and
// in its Claude section; a failed Test on its row; a provider breaker that opens said
// the same way on the Connections page, the Cooldown Manager and the Overview; the
// Cooldown Manager at 1024 px with its Clear buttons in view. A real `switchyard
// serve` with the two default Anthropic connections on one fake upstream, two GLM
// connections on another (answering 503), and a local server on a closed port.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { freePort, gatewayConfig, MODEL, openRoute, SCREENSHOT_DIR, startStack, waitFor } from "./harness.mjs";

const anthropicError = (type, message) => ({ type: "error", error: { type, message } });

/** An Anthropic answer as the fake sends it by default. */
const anthropicMessage = {
  id: "msg_e2e",
  type: "message",
  role: "assistant",
  model: MODEL,
  content: [{ type: "text", text: "Hello." }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 1, output_tokens: 2 },
};

/** The two default Anthropic connections, two GLM ones on `glmUrl`, a local server that is down. */
function statusConfig(anthropicUrl, glmUrl, closedPort) {
  const glm = (id, name, priority) => `
[[connections]]
id = "${id}"
provider = "glm"
api_format = "openai"
name = "${name}"
auth = "api_key"
api_key = "sk-${id}"
base_url = "${glmUrl}"
priority = ${priority}
enabled = true
models = ["glm-5"]
`;
  return `${gatewayConfig(anthropicUrl)}${glm("glm-1", "GLM one", 1)}${glm("glm-2", "GLM two", 2)}
[[connections]]
id = "local-down"
provider = "ollama"
api_format = "openai"
name = "Ollama (down)"
auth = "none"
base_url = "http://127.0.0.1:${closedPort}/v1"
priority = 1
enabled = true
models = ["qwen3-coder:30b"]
`;
}

describe("honest status and the request log in a real browser", { timeout: 150_000 }, () => {
  let stack;
  let anthropic;
  let glm;
  let gw;
  let page;
  let problems;

  before(async () => {
    const closed = await freePort();
    stack = await startStack({
      moreFakes: ["glm"],
      config: (url, fakes) => statusConfig(url, fakes.glm.url, closed),
    });
    ({ fake: anthropic, gw, page, problems } = stack);
    glm = stack.fakes.glm;
    await glm.setDefault({ status: 503, body: { error: { message: "Service Unavailable", type: "server_error" } } });
  });

  after(() => stack?.stop());

  const screenshot = (name) => page.screenshot({ path: join(SCREENSHOT_DIR, name), fullPage: false });
  const clearCooldowns = async () => {
    const cleared = await gw.api("POST", "/api/resilience/cooldowns", { all: true });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
  };
  /** A connection's row on the Connections page. */
  const connectionRow = (name) =>
    page.getByRole("table", { name: "Connections" }).getByRole("row").filter({ has: page.getByRole("rowheader", { name }) });

  test("Requests: a failed-over request shows both attempts and why it went where it went", async () => {
    await openRoute(page, gw.baseUrl, "requests", "Requests");
    const list = page.getByRole("region", { name: "Client requests (live)" });
    await list.getByText("No requests yet").waitFor();

    await anthropic.push({ status: 503, body: anthropicError("overloaded_error", "Overloaded") });
    const served = await gw.message("fail over");
    assert.equal(served.status, 200, JSON.stringify(served.body));
    assert.equal(served.connection, "key-b");
    const [logged] = await waitFor(async () => {
      const rows = await gw.get("/api/requests?limit=1");
      return rows[0]?.outcome === "served-after-failover" && rows;
    }, { what: "the request log to hold the failed-over request" });
    assert.equal(logged.attempts, 2);

    // No reload: the page polls the log.
    const row = list.getByRole("row").filter({ has: page.getByRole("button", { name: `Details of request ${logged.requestId}` }) });
    await row.waitFor();
    const cells = await row.getByRole("cell").allInnerTexts();
    assert.match(cells.join(" | "), /^just now \| ide \| Served after failover\s*200 \| key-b\s+key-b \| 2 \| \d+ ms \| Details$/, cells.join(" | "));

    await row.getByRole("button", { name: `Details of request ${logged.requestId}` }).click();
    await waitFor(() => page.url().endsWith(`#/requests/${logged.requestId}`), { what: "the detail's address" });
    const detail = page.getByRole("region", { name: "Request detail" });
    const attempts = detail.getByRole("table", { name: "Upstream attempts, in order" }).locator("tbody tr");
    await attempts.first().waitFor();
    assert.equal(await attempts.count(), 2);
    const [first, second] = [await attempts.nth(0).innerText(), await attempts.nth(1).innerText()];
    assert.match(first, /^1\s+claude-a\s+claude-a\s+anthropic\s+claude-sonnet-4-6\s+503\s+\d+ ms\s+\d+ B\s+not reported\s+HTTP 503$/, first);
    assert.match(
      second,
      /^2\s+key-b\s+key-b\s+anthropic\s+claude-sonnet-4-6\s+200\s+\d+ ms\s+[\d.]+ (B|KB)\s+[\d,]+ in( \([\d,]+ cached\))? · [\d,]+ out\s+—$/,
      second,
    );
    const candidates = detail.getByRole("table", { name: "Candidates, in plan order" }).locator("tbody tr");
    assert.deepEqual(
      (await candidates.allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim()),
      [
        "1 claude-a claude-a anthropic claude-sonnet-4-6 Failed HTTP 503: Overloaded",
        "2 key-b key-b anthropic claude-sonnet-4-6 Served —",
      ],
    );
    await detail.getByText("Strategy").waitFor();
    assert.match(await detail.innerText(), /the agent received HTTP 200/);
    await screenshot("requests-detail.png");
    await detail.getByRole("link", { name: "Close" }).click();
    await detail.waitFor({ state: "detached" });
  });

  test("Connections: Claude usage windows from the answer's headers show on the row and in the Claude section", async () => {
    await clearCooldowns();
    const now = Math.floor(Date.now() / 1000);
    await anthropic.push({
      status: 200,
      headers: {
        "anthropic-ratelimit-unified-status": "allowed_warning",
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-status": "allowed_warning",
        "anthropic-ratelimit-unified-5h-utilization": "0.87",
        "anthropic-ratelimit-unified-5h-reset": String(now + 2 * 3600 + 300),
        "anthropic-ratelimit-unified-7d-status": "allowed",
        "anthropic-ratelimit-unified-7d-utilization": "0.31",
        "anthropic-ratelimit-unified-7d-reset": String(now + 4 * 86_400 + 3600),
      },
      body: anthropicMessage,
    });
    const served = await gw.message("usage");
    assert.equal(served.connection, "claude-a", JSON.stringify(served));
    const usage = (await gw.get("/api/providers/claude-a")).usage;
    assert.deepEqual(
      usage?.windows.map((w) => [w.window, w.usedPermille]),
      [["5h", 870], ["7d", 310]],
      JSON.stringify(usage),
    );

    await openRoute(page, gw.baseUrl, "connections", "Connections");
    const windows = connectionRow("claude-a").getByRole("list", { name: "Usage windows" });
    await windows.waitFor();
    const lines = await windows.getByRole("listitem").allInnerTexts();
    assert.equal(lines.length, 2);
    assert.match(lines[0], /^5h 87% · resets in 2h 0[45]m \d\ds$/, lines[0]);
    assert.match(lines[1], /^7d 31% · resets in 4d 0[01]h$/, lines[1]);

    await page.getByRole("button", { name: "Edit connection claude-a" }).click();
    const claude = page.getByRole("region", { name: "Claude options" });
    const five = claude.getByRole("meter", { name: "5h window used" });
    await five.waitFor();
    assert.equal(await five.getAttribute("aria-valuenow"), "87");
    assert.equal(await claude.getByRole("meter", { name: "7d window used" }).getAttribute("aria-valuenow"), "31");
    const bars = await claude.getByRole("group", { name: "Usage windows" }).innerText();
    assert.match(bars, /5h\s*87% used\s*Binding\s*Resets in 2h 0[45]m \d\ds/, bars);
    assert.match(bars, /7d\s*31% used\s*Resets in 4d 0[01]h/, bars);
    await page.getByRole("region", { name: "Edit claude-a" }).getByRole("button", { name: "Cancel" }).click();
  });

  test("Connections: a failed Test shows on the connection's row", async () => {
    await openRoute(page, gw.baseUrl, "connections", "Connections");
    const row = connectionRow("Ollama (down)");
    assert.equal(await row.locator(".badge").first().innerText(), "Active");
    await row.getByRole("button", { name: "Test connection Ollama (down)" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /^Test of Ollama \(down\): failed \(no HTTP status, \d+ ms\)\. could not connect to the upstream$/ })
      .waitFor();
    // connectionsChanged refetches the list: the row says so, in words.
    const badge = row.locator(".badge", { hasText: "Test failed" });
    await badge.waitFor();
    assert.match(await badge.getAttribute("class"), /badge-danger/);
    const status = await row.getByRole("cell").nth(1).innerText();
    assert.match(status, /Its last Test failed: could not connect to the upstream\./, status);
    assert.match(status, /Last Test failed\s+just now/, status);
    const api = await gw.get("/api/providers/local-down");
    assert.equal(api.status.state, "test-failed");
    assert.deepEqual([api.lastTest.ok, api.lastTest.message], [false, "could not connect to the upstream"]);
  });

  test("a provider breaker that opens says so on the Connections page, the Cooldown Manager and the Overview", async () => {
    const lowered = await gw.api("PATCH", "/api/resilience", {
      providerBreaker: { apikey: { failureThreshold: 2, degradationThreshold: 1 } },
    });
    assert.equal(lowered.status, 200, JSON.stringify(lowered.body));
    await openRoute(page, gw.baseUrl, "connections", "Connections");
    // One request tries both GLM connections: two failures open the breaker.
    const failed = await gw.chat("glm-5");
    assert.equal(failed.status, 502, JSON.stringify(failed.body));
    const breaker = (await gw.get("/api/resilience/breakers")).find((b) => b.provider === "glm");
    assert.equal(breaker?.state, "OPEN", JSON.stringify(breaker));
    // The cooldowns end in seconds; the open breaker keeps them out all the same.
    await clearCooldowns();
    const health = await gw.get("/api/monitoring/health");
    assert.deepEqual(
      health.connections.filter((c) => !c.status.routable).map((c) => [c.id, c.status.label]),
      [["glm-1", "Breaker open"], ["glm-2", "Breaker open"]],
    );
    assert.equal(health.connectionsOutOfRotation, 2);

    // Connections: pushed by breakersChanged, no reload.
    for (const name of ["GLM one", "GLM two"]) {
      const badge = connectionRow(name).locator(".badge", { hasText: "Breaker open" });
      await badge.waitFor();
      assert.match(await badge.getAttribute("class"), /badge-danger/);
      assert.match(await connectionRow(name).innerText(), /Provider 'glm' failed 2 times in a row/);
    }
    assert.match(await connectionRow("GLM one").locator("time.countdown").innerText(), /^\d+s$/);
    await screenshot("connections.png");

    // Cooldown Manager: not "every connection is in rotation".
    await openRoute(page, gw.baseUrl, "cooldowns", "Cooldown Manager");
    const table = page.getByRole("table", { name: "Connections taken out of routing" });
    for (const id of ["glm-1", "glm-2"]) {
      const row = table.getByRole("row").filter({ has: page.getByRole("rowheader", { name: id, exact: true }) });
      await row.locator(".badge", { hasText: "Breaker open" }).waitFor();
      assert.match(await row.innerText(), /Provider 'glm' failed 2 times in a row \(the upstream failed \(5xx\)\)/);
      await row.getByRole("link", { name: "Breaker: Resilience" }).waitFor();
    }
    assert.equal(await page.getByText("Every connection is in rotation").count(), 0);

    // Overview: the connections line and the ones out of rotation.
    await openRoute(page, gw.baseUrl, "overview", "Overview");
    const card = page.getByRole("region", { name: "Connections", exact: true });
    await card.getByText("2 out of rotation").waitFor();
    assert.match(await card.getByLabel("Connections in rotation").innerText(), /^3 routable · 2 out of rotation \(of 5 connections\)$/);
    const listed = card.getByRole("list", { name: "Connections needing attention" }).getByRole("listitem");
    const texts = (await listed.allInnerTexts()).map((t) => t.replace(/\s+/g, " "));
    assert.equal(texts.length, 3, texts.join("\n"));
    assert.match(texts[0], /^GLM one glm-1 Breaker open (ends in )?\d+s Provider 'glm' failed 2 times in a row/);
    assert.match(texts[1], /^GLM two glm-2 Breaker open/);
    assert.match(texts[2], /^Ollama \(down\) local-down Test failed Its last Test failed/);
    // The agents' view: their requests and outcomes apart from the upstream attempts.
    const summary = await gw.get("/api/monitoring/summary");
    const agents = page.getByRole("group", { name: "Agent requests" });
    const value = (group, label) => group.locator(".stat", { hasText: label }).locator(".stat-value").innerText();
    // The counts shown when the page opened are refetched at once.
    await waitFor(async () => (await value(agents, "Requests, last hour")) === String(summary.clientsLastHour.requests), {
      what: `"Requests, last hour" to read ${summary.clientsLastHour.requests}`,
    });
    assert.equal(await value(agents, "Served after failover"), String(summary.clientsLastHour.servedAfterFailover));
    assert.equal(await value(agents, "Errors agents received"), String(summary.clientsLastHour.errors));
    const upstream = page.getByRole("group", { name: "Upstream attempts" });
    assert.equal(await value(upstream, "Attempts, last hour"), String(summary.attemptsLastHour));
    assert.equal(await value(upstream, "Failed attempts"), String(summary.failedAttemptsLastHour));
    assert.deepEqual(
      [summary.clientsLastHour.requests, summary.clientsLastHour.servedAfterFailover, summary.clientsLastHour.errors],
      [3, 1, 1],
      JSON.stringify(summary),
    );
    await screenshot("overview.png");
  });

  test("Cooldown Manager: at 1024 px the table fits and its Clear buttons are in view", async () => {
    await anthropic.push({
      status: 429,
      headers: { "retry-after": "120" },
      body: anthropicError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage."),
    });
    const served = await gw.message("cool down");
    assert.equal(served.connection, "key-b", JSON.stringify(served));
    await page.setViewportSize({ width: 1024, height: 768 });
    try {
      await openRoute(page, gw.baseUrl, "cooldowns", "Cooldown Manager");
      const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "claude-a", exact: true }) });
      const clear = row.getByRole("button", { name: "Clear cooldown of claude-a" });
      await clear.waitFor();
      assert.match(await row.innerText(), /Cooling down: rate limited by the upstream \(HTTP 429\)/);
      // The raw upstream answer only on demand.
      const raw = row.getByText(/Number of request tokens has exceeded/);
      assert.equal(await raw.isVisible(), false);
      await row.getByText("Raw upstream answer").click();
      await raw.waitFor();
      const wrap = page.getByRole("region", { name: "Out of routing (live)" }).locator(".table-wrap");
      const fits = await wrap.evaluate((w) => w.scrollWidth <= w.clientWidth);
      assert.ok(fits, "the table fits its card at 1024 px");
      const box = await clear.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 1024, `Clear is in view: ${JSON.stringify(box)}`);
      await clear.click();
      await row.waitFor({ state: "detached" });
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  test("Requests: every request as its agent saw it, newest first, and filtered by status", async () => {
    const logged = await gw.get("/api/requests");
    assert.deepEqual(
      logged.map((r) => [r.model, r.status, r.outcome]),
      [
        [MODEL, 200, "served-after-failover"],
        ["glm-5", 502, "failed"],
        [MODEL, 200, "served"],
        [MODEL, 200, "served-after-failover"],
      ],
    );
    await openRoute(page, gw.baseUrl, "requests", "Requests");
    const list = page.getByRole("region", { name: "Client requests (live)" });
    const rows = list.getByRole("table", { name: "Client requests, newest first" }).locator("tbody tr");
    await waitFor(async () => (await rows.count()) === 4, { what: "the four requests" });
    const outcomes = await rows.locator(".badge").allInnerTexts();
    assert.deepEqual(outcomes, ["Served after failover", "Failed", "Served", "Served after failover"]);
    assert.match(await rows.nth(1).innerText(), /all_attempts_failed/);
    await screenshot("requests.png");

    await list.getByLabel("Status").selectOption("error");
    await waitFor(async () => (await rows.count()) === 1, { what: "only the failed request" });
    assert.match(await rows.first().innerText(), /glm-5[\s\S]*Failed\s*502/);
    await list.getByLabel("Connection").selectOption("key-b");
    await list.getByText("No request matches these filters").waitFor();
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

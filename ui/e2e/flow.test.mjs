// Real-browser end-to-end test of flow control (SPEC 4.6) through the settings UI: a
// round-robin combo made on the Combos page spreads requests over its connections,
// a cap set in the connection form holds requests in its queue, and a gateway-wide
// cap set on the Resilience page holds them at the shared gate, both shown live on
// the Connections page. Four fake upstreams (one per connection, each counting its
// calls) behind a real `switchyard serve`; every step is checked on the page and
// through the gateway's APIs.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  chatCompletion,
  checkPrerequisites,
  CLIENT_KEY,
  openRoute,
  openUi,
  SCREENSHOT_DIR,
  startFakeUpstream,
  startGateway,
  waitFor,
} from "./harness.mjs";

const SPREAD = ["oa-1", "oa-2", "oa-3"];
const CAPPED = "glm-cap";

/** Three OpenAI connections and one GLM connection, each on its own fake upstream. */
function flowConfig(urls) {
  const connection = (id, provider, name, model) => `
[[connections]]
id = "${id}"
provider = "${provider}"
api_format = "openai"
name = "${name}"
auth = "api_key"
api_key = "sk-${id}"
base_url = "${urls[id]}"
priority = 1
enabled = true
models = ["${model}"]
`;
  return `[gateway]
allow_unauthenticated_loopback = false

[[api_keys]]
name = "ide"
key = "${CLIENT_KEY}"
${SPREAD.map((id, i) => connection(id, "openai", `OpenAI ${i + 1}`, "gpt-4o-mini")).join("")}${connection(CAPPED, "glm", "GLM capped", "glm-5")}`;
}

describe("flow control in a real browser", { timeout: 120_000 }, () => {
  /** Fake upstreams by connection id. */
  const fakes = {};
  let gw;
  let browser;
  let page;
  const problems = [];

  before(async () => {
    checkPrerequisites();
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    for (const id of [...SPREAD, CAPPED]) {
      fakes[id] = await startFakeUpstream();
      await fakes[id].setDefault({ status: 200, body: chatCompletion(id === CAPPED ? "glm-5" : "gpt-4o-mini") });
    }
    const urls = Object.fromEntries(Object.entries(fakes).map(([id, f]) => [id, f.url]));
    gw = await startGateway(urls[CAPPED], { config: flowConfig(urls) });
    ({ browser, page } = await openUi(gw, problems));
  });

  after(async () => {
    if (process.env.E2E_VERBOSE) console.log(`${Object.values(fakes).map((f) => f.child.log()).join("\n")}\n${gw?.child.log()}`);
    await browser?.close().catch(() => {});
    await gw?.stop().catch(() => {});
    for (const f of Object.values(fakes)) await f.release({ all: true }).catch(() => {});
    for (const f of Object.values(fakes)) await f.stop().catch(() => {});
  });

  test("Combos: a round-robin combo made on the page spreads requests over its three connections", async () => {
    await page.getByRole("link", { name: "Combos" }).click();
    await page.getByRole("heading", { level: 1, name: "Combos" }).waitFor();
    await page.getByText("No combos yet").waitFor();

    await page.getByRole("button", { name: "New combo" }).click();
    const form = page.getByRole("region", { name: "New combo" });
    await form.getByLabel("Name").fill("spread");
    await form.getByLabel("Strategy").selectOption("round-robin");
    await form.getByText("Each request starts one target further along the list than the last").waitFor();
    for (const [i, id] of SPREAD.entries()) {
      const n = i + 1;
      await form.getByRole("button", { name: "Add target" }).click();
      await form.getByLabel(`Model of target ${n}`).fill("openai/gpt-4o-mini");
      await form.getByLabel(`Pinned connection of target ${n}`).selectOption(id);
      await form.getByText(`Sends gpt-4o-mini to OpenAI ${n}.`).waitFor();
    }
    await form.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Created spread." }).waitFor();

    const stored = (await gw.get("/api/combos")).find((c) => c.name === "spread");
    assert.deepEqual(
      { strategy: stored?.strategy, targets: stored?.targets.map((t) => `${t.model}@${t.connection}`) },
      { strategy: "round-robin", targets: SPREAD.map((id) => `openai/gpt-4o-mini@${id}`) },
      JSON.stringify(stored),
    );
    const card = page.getByRole("region", { name: "spread" });
    await card.getByText("Round robin").waitFor();
    const rows = card.getByRole("table", { name: "Targets of spread" }).locator("tbody tr");
    assert.equal(await rows.count(), 3);
    for (const [i, id] of SPREAD.entries()) {
      const row = rows.nth(i);
      await row.getByText(`OpenAI ${i + 1}`, { exact: true }).first().waitFor();
      await row.getByText("Active").waitFor();
      await row.getByText("0 in flight (no cap)").waitFor();
      assert.equal(await fakes[id].calls(), 0, `${id} has not been called yet`);
    }

    const served = [];
    for (let i = 0; i < 6; i++) {
      const r = await gw.chat("spread", `request ${i}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      served.push(r.connection);
    }
    for (const id of SPREAD) {
      assert.equal(served.filter((c) => c === id).length, 2, `${id} served two of six: ${served.join(", ")}`);
      assert.equal(await fakes[id].calls(), 2, `${id}'s upstream got two calls`);
    }
    // Round robin: each request starts one target further along than the last.
    assert.deepEqual(served.slice(3), served.slice(0, 3), `the order repeats: ${served.join(", ")}`);
    assert.deepEqual([...served.slice(0, 3)].sort(), SPREAD);
    await page.screenshot({ path: join(SCREENSHOT_DIR, "combos.png"), fullPage: false });
  });

  test("Connections: a cap of 1 set in the form holds one request in flight and queues two, live", async () => {
    await openRoute(page, gw.baseUrl, "connections", "Connections");
    await page.getByRole("button", { name: "Edit connection GLM capped" }).click();
    const form = page.getByRole("region", { name: "Edit GLM capped" });
    const flow = form.getByRole("region", { name: "Flow control" });
    await flow.getByLabel("Max concurrent requests").fill("1");
    await flow.getByLabel("Per-model caps").fill("glm-4.6=3");
    await form.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "Saved GLM capped." }).waitFor();
    const saved = await gw.get(`/api/providers/${CAPPED}`);
    assert.equal(saved.maxConcurrent, 1);
    assert.deepEqual(saved.rateLimitOverrides, { modelConcurrency: { "glm-4.6": 3 } });

    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: /GLM capped/ }) });
    await row.getByText("0 in flight (cap 1)").waitFor();
    await row.getByText("glm-4.6: 0 in flight (cap 3), 0 queued").waitFor();

    const fake = fakes[CAPPED];
    await fake.setDefault({ status: 200, body: chatCompletion("glm-5"), hold: true });
    const requests = ["one", "two", "three"].map((content) => gw.chat("glm/glm-5", content));
    try {
      await waitFor(
        async () => {
          const live = (await gw.get("/api/rate-limits")).connections.find((c) => c.connectionId === CAPPED);
          return live?.inFlight === 1 && live.queued === 2 && (await fake.inFlight()) === 1;
        },
        { what: "one request in flight upstream and two queued at the gateway" },
      );
      // The page polls the live load: no reload needed.
      await row.getByText("1 in flight (cap 1)").waitFor();
      await row.getByText("At cap").waitFor();
      await row.getByText("2 queued", { exact: true }).waitFor();
    } finally {
      await fake.release({ all: true });
    }
    const answers = await Promise.all(requests);
    assert.deepEqual(
      answers.map((a) => [a.status, a.connection]),
      [
        [200, CAPPED],
        [200, CAPPED],
        [200, CAPPED],
      ],
      JSON.stringify(answers.map((a) => a.body)),
    );
    assert.equal(await fake.calls(), 3, "each request reached the upstream once, one at a time");
    await row.getByText("0 in flight (cap 1)").waitFor();
    await row.getByText("0 queued", { exact: true }).waitFor();
    const live = (await gw.get("/api/rate-limits")).connections.find((c) => c.connectionId === CAPPED);
    assert.deepEqual([live.inFlight, live.queued], [0, 0]);
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });

  test("Resilience → Connections: a gateway-wide cap of 1 set on the page holds the second request, shown live", async () => {
    await openRoute(page, gw.baseUrl, "resilience", "Resilience");
    const queue = page.getByRole("region", { name: "Request queue" });
    await queue.getByLabel("Gateway-wide concurrency cap").fill("1");
    await queue.getByRole("button", { name: "Save Request queue" }).click();
    await queue.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    const stored = await gw.get("/api/resilience");
    assert.equal(stored.requestQueue.globalConcurrentRequests, 1, JSON.stringify(stored.requestQueue));

    await openRoute(page, gw.baseUrl, "connections", "Connections");
    const gateway = page
      .getByRole("region", { name: "Shared concurrency caps" })
      .getByRole("listitem")
      .filter({ hasText: /^Gateway:/ });
    await gateway.filter({ hasText: "Gateway: 0 of 1 in flight, 0 queued" }).waitFor();

    // Whichever OpenAI connection serves it, the first request is held upstream; the
    // second waits at the gateway-wide gate before any connection is tried.
    const openai = SPREAD.map((id) => fakes[id]);
    for (const fake of openai) await fake.setDefault({ status: 200, body: chatCompletion("gpt-4o-mini"), hold: true });
    const upstreamInFlight = async () => (await Promise.all(openai.map((f) => f.inFlight()))).reduce((a, b) => a + b, 0);
    const requests = ["first", "second"].map((content) => gw.chat("openai/gpt-4o-mini", content));
    try {
      await waitFor(
        async () => {
          const live = (await gw.get("/api/rate-limits")).global;
          return live?.inFlight === 1 && live.queued === 1 && (await upstreamInFlight()) === 1;
        },
        { what: "one request held upstream and one queued at the gateway-wide gate" },
      );
      // The page polls the live load: no reload needed.
      await gateway.filter({ hasText: "Gateway: 1 of 1 in flight, 1 queued" }).waitFor();
      await gateway.getByText("At cap").waitFor();
    } finally {
      for (const fake of openai) await fake.release({ all: true });
    }
    const answers = await Promise.all(requests);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200],
      JSON.stringify(answers.map((a) => a.body)),
    );
    await gateway.filter({ hasText: "Gateway: 0 of 1 in flight, 0 queued" }).waitFor();
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

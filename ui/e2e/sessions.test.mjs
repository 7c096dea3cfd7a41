// Real-browser end-to-end test of session affinity (SPEC 4.4) on the Connections
// page: with a TTL set through the management API, two requests of one Claude Code
// session pin it to the connection that served them; the page shows the count on
// that connection and the session (by its hash only) in the Pinned sessions panel,
// live, and Forget unpins it. A real `switchyard serve` with the default two
// Anthropic connections on one fake upstream.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openRoute, SCREENSHOT_DIR, startStack } from "./harness.mjs";

const SESSION_ID = "e2e-session-1";
const TTL_MS = 600_000;

describe("session affinity in a real browser", { timeout: 90_000 }, () => {
  let stack;
  let gw;
  let page;
  let problems;

  before(async () => {
    stack = await startStack();
    ({ gw, page, problems } = stack);
  });

  after(() => stack?.stop());

  test("Connections: a session's two requests pin it, shown live on its connection and in the panel; Forget unpins it", async () => {
    await openRoute(page, gw.baseUrl, "connections", "Connections");
    const panel = page.getByRole("region", { name: "Pinned sessions (live)" });
    await panel.getByText("Session affinity is off").waitFor();

    const on = await gw.api("PATCH", "/api/resilience", { sessionAffinityTtlMs: TTL_MS });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    // The settings change is pushed to the page: no reload.
    await panel.getByText("No sessions pinned").waitFor();

    const headers = { "x-claude-code-session-id": SESSION_ID };
    const first = await gw.message("one", { headers });
    const second = await gw.message("two", { headers });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(second.status, 200, JSON.stringify(second.body));
    const served = first.connection;
    assert.ok(served, "the gateway names the connection that served");
    assert.equal(second.connection, served, "the session's second request stays on its connection");
    const other = served === "claude-a" ? "key-b" : "claude-a";

    const { ttlMs, pins } = await gw.get("/api/sessions");
    assert.equal(ttlMs, TTL_MS);
    assert.equal(pins.length, 1, JSON.stringify(pins));
    const [pin] = pins;
    assert.deepEqual([pin.provider, pin.connection], ["anthropic", served]);
    assert.match(pin.session, /^[0-9a-f]{12}$/, "the session is listed by a hash prefix");

    // Both figures are polled live: no reload.
    const connections = page.getByRole("table", { name: "Connections" });
    const rowOf = (id) =>
      connections.getByRole("row").filter({ has: page.getByRole("rowheader", { name: new RegExp(`^${id}\\b`) }) });
    await rowOf(served).getByText("1 session pinned").waitFor();
    assert.equal(await rowOf(other).getByText(/pinned/).count(), 0, `nothing is pinned to ${other}`);
    const pinRow = panel.getByRole("row").filter({ has: page.getByRole("rowheader", { name: pin.session }) });
    await pinRow.waitFor();
    const cells = await pinRow.getByRole("cell").allInnerTexts();
    assert.equal(cells[0], "anthropic");
    assert.match(cells[1], new RegExp(`^${served}\\s+${served}$`), `the connection's name and id: ${cells[1]}`);
    assert.equal(cells[2], "just now");
    assert.match(cells[3], /^(10m 00s|9m 5\ds)$/, `expires in: ${cells[3]}`);
    assert.equal(await page.getByText(SESSION_ID).count(), 0, "the session id the client sent is never shown");
    await page.screenshot({ path: join(SCREENSHOT_DIR, "sessions.png"), fullPage: false });

    await pinRow.getByRole("button", { name: `Forget sessions pinned to ${served}` }).click();
    await panel.getByRole("status").filter({ hasText: `Forgot 1 pinned session on ${served}.` }).waitFor();
    await pinRow.waitFor({ state: "detached" });
    await panel.getByText("No sessions pinned").waitFor();
    await rowOf(served).getByText("1 session pinned").waitFor({ state: "detached" });
    assert.deepEqual((await gw.get("/api/sessions")).pins, []);
    const flow = (await gw.get("/api/rate-limits")).connections.find((c) => c.connectionId === served);
    assert.equal(flow?.pinnedSessions, 0, JSON.stringify(flow));
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

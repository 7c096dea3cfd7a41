// Real-browser end-to-end test of exclusive session leases (SPEC 4.4) on the Leases
// page: an agent whose client key may lease acquires one over HTTP, the page shows it
// live (holder, connection, generation, countdown), Release ends it, and the agent's
// next request is refused as stale. A real `switchyard serve` with the default two
// Anthropic connections on one fake upstream, plus the agent's client key.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { gatewayConfig, openRoute, SCREENSHOT_DIR, startStack } from "./harness.mjs";

const AGENT_KEY = "sy-e2e-agent-key-0001";
/** The one connection the agent may lease. */
const LEASED = "key-b";
/** `vlo_` and 43 base64url characters. */
const OWNER = "vlo_e2e-lease-owner_0123456789_abcdefghijklmnop";
const TTL_MS = 120_000;

/** The default config and a client key that may hold exclusive leases on `LEASED`. */
const leasesConfig = (upstreamUrl) => `${gatewayConfig(upstreamUrl)}
[[api_keys]]
name = "agent"
key = "${AGENT_KEY}"
scopes = ["lease:exclusive"]
allowed_connections = ["${LEASED}"]
`;

describe("exclusive leases in a real browser", { timeout: 90_000 }, () => {
  let stack;
  let gw;
  let page;
  let problems;

  before(async () => {
    stack = await startStack({ config: leasesConfig });
    ({ gw, page, problems } = stack);
  });

  after(() => stack?.stop());

  /** The agent's lease call (its own client key, not the management token). */
  async function leaseCall(body) {
    const res = await fetch(`${gw.baseUrl}/api/v1/session-leases`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${AGENT_KEY}`,
        "content-type": "application/json",
        "x-switchyard-lease-owner": OWNER,
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  }

  /** An inference request of the lease's owner, fenced by `generation`. */
  const agentMessage = (content, generation) =>
    gw.message(content, {
      headers: {
        "x-api-key": AGENT_KEY,
        "x-switchyard-lease-owner": OWNER,
        "x-switchyard-lease-generation": String(generation),
      },
    });

  test("Leases: a lease acquired over HTTP shows live; Release ends it and fences its owner out", async () => {
    assert.match(OWNER, /^vlo_[A-Za-z0-9_-]{43}$/);
    await openRoute(page, gw.baseUrl, "leases", "Leases");
    const card = page.getByRole("region", { name: "Active leases (live)" });
    await card.getByText("No exclusive leases").waitFor();

    const acquired = await leaseCall({ action: "acquire", model: "anthropic/claude-sonnet-4-6", ttlMs: TTL_MS });
    assert.equal(acquired.status, 200, JSON.stringify(acquired.body));
    assert.equal(acquired.body.state, "active");
    assert.equal(acquired.body.result, "acquired");
    assert.equal(acquired.body.generation, 1);
    assert.equal(acquired.body.connection.provider, "anthropic");

    const [listed, ...others] = (await gw.get("/api/leases")).leases;
    assert.deepEqual(others, []);
    assert.deepEqual([listed.keyName, listed.connection, listed.generation], ["agent", LEASED, 1]);
    const served = await agentMessage("one", 1);
    assert.equal(served.status, 200, JSON.stringify(served.body));
    assert.equal(served.connection, LEASED, "the owner's requests go to the leased connection");

    // leasesChanged is pushed to the page: no reload.
    const row = card.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "agent" }) });
    await row.waitFor();
    const cells = await row.getByRole("cell").allInnerTexts();
    assert.match(cells[0], new RegExp(`^${LEASED}\\s+${LEASED}$`), `the connection's name and id: ${cells[0]}`);
    assert.deepEqual(cells.slice(1, 5), ["anthropic", "1", "just now", "just now"]);
    assert.match(cells[5], /^(2m 00s|1m 5\ds)$/, `expires in: ${cells[5]}`);
    assert.equal(await page.getByText(OWNER).count(), 0, "the owner token is never shown");
    /** Whether the table fits its card (at the harness's 1280 px), with no scroll bar. */
    const fits = () => card.locator(".table-wrap").evaluate((wrap) => wrap.scrollWidth <= wrap.clientWidth);
    assert.ok(await fits(), "the table fits at 1280 px");

    await row.getByRole("button", { name: `Release the lease of agent on ${LEASED}` }).click();
    const confirm = row.getByRole("group", { name: `Release the lease of agent on ${LEASED}` });
    await confirm.getByText("Its next request is refused.").waitFor();
    assert.ok(await fits(), "the table fits at 1280 px while asking to confirm");
    await page.screenshot({ path: join(SCREENSHOT_DIR, "leases.png"), fullPage: false });
    await confirm.getByRole("button", { name: "Release lease" }).click();
    await card
      .getByRole("status")
      .filter({ hasText: `Released the lease of agent on ${LEASED}. Its next request is refused as stale.` })
      .waitFor();
    await card.getByText("No exclusive leases").waitFor();
    assert.equal(await card.getByRole("table").count(), 0);

    assert.deepEqual((await gw.get("/api/leases")).leases, []);
    const fenced = await agentMessage("two", 1);
    assert.equal(fenced.status, 409, JSON.stringify(fenced.body));
    assert.equal(fenced.error, "lease-fence-stale");
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

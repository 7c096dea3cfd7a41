// Real-browser end-to-end test of provider presets: the GLM preset adds a working
// connection with no typing beyond the key. The gateway runs with its GLM preset
// pointed at a small OpenAI-compatible fake in this process
// (`SWITCHYARD_PRESET_GLM_BASE_URL`), which records what it receives; the new
// connection is tested as soon as it is saved, its Test shows on its row, and a chat
// completion for `glm-4.6` reaches the fake with the key as its bearer token.
//
// Run: npm run ui:build && npm run ui:e2e   (prerequisites: see harness.mjs)
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chatCompletion, openRoute, SCREENSHOT_DIR, startStack, waitFor } from "./harness.mjs";

const GLM_KEY = "glm-e2e-key-0123456789";
const LABEL = "GLM (Z.ai), OpenAI-compatible endpoint";

/** An OpenAI-compatible upstream: `GET …/models` lists one model, `POST …` answers a chat completion. */
async function startOpenAiFake() {
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method, path: req.url, authorization: req.headers.authorization ?? null, body });
      res.setHeader("content-type", "application/json");
      if (req.method === "GET") {
        res.end(JSON.stringify({ object: "list", data: [{ id: "glm-4.6", object: "model", owned_by: "z-ai" }] }));
        return;
      }
      res.end(JSON.stringify(chatCompletion("glm-4.6")));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("provider presets in a real browser", { timeout: 90_000 }, () => {
  let glm;
  let stack;
  let gw;
  let page;
  let problems;

  before(async () => {
    glm = await startOpenAiFake();
    stack = await startStack({ env: { SWITCHYARD_PRESET_GLM_BASE_URL: glm.url } });
    ({ gw, page, problems } = stack);
  });

  after(async () => {
    await stack?.stop();
    await glm?.stop();
  });

  test("the GLM preset adds a working connection: only the key is typed, its Test passes on the row", async () => {
    const preset = (await gw.get("/api/presets")).find((p) => p.id === "glm");
    assert.deepEqual(
      [preset?.label, preset?.provider, preset?.apiFormat, preset?.baseUrl],
      [LABEL, "glm", "openai-chat", glm.url],
    );

    await openRoute(page, gw.baseUrl, "connections", "Connections");
    await page.getByRole("button", { name: "Add connection" }).click();
    const form = page.getByRole("region", { name: "Add connection" });
    await form.getByLabel("Preset").selectOption("glm");
    assert.equal(await form.getByLabel("Base URL").inputValue(), glm.url);
    assert.equal(await form.getByLabel("Models").inputValue(), "glm-4.6\nglm-4.5-air");
    const key = form.getByLabel("API key");
    await form.getByText("Get a key: z.ai → API keys.").waitFor();
    await key.fill(GLM_KEY);
    await page.screenshot({ path: join(SCREENSHOT_DIR, "connection-preset.png"), fullPage: false });
    await form.getByRole("button", { name: "Save", exact: true }).click();

    await page
      .getByRole("status")
      .filter({ hasText: new RegExp(`^Added ${LABEL.replace(/[()]/g, "\\$&")}\\. Test of .+: OK \\(HTTP 200, \\d+ ms\\)\\. the upstream accepted the credentials$`) })
      .waitFor();
    const created = (await gw.get("/api/providers")).find((c) => c.provider === "glm");
    assert.ok(created, "the connection exists");
    assert.deepEqual(
      [created.name, created.apiFormat, created.authKind, created.baseUrl, created.models, created.hasSecret],
      [LABEL, "openai-chat", "api_key", glm.url, ["glm-4.6", "glm-4.5-air"], true],
    );
    assert.deepEqual([created.lastTest?.ok, created.status.state], [true, "routable"]);
    const row = page
      .getByRole("table", { name: "Connections" })
      .getByRole("row")
      .filter({ has: page.getByRole("rowheader", { name: created.id }) });
    await row.getByText("Last Test passed").waitFor();
    assert.equal(await row.locator(".badge").first().innerText(), "Active");
    // The Test used the key: GET /models with it as the bearer token.
    assert.deepEqual(
      glm.seen.map((r) => [r.method, r.path, r.authorization]),
      [["GET", "/models", `Bearer ${GLM_KEY}`]],
    );

    const chat = await gw.chat("glm-4.6", "hello glm");
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.equal(chat.connection, created.id);
    assert.equal(chat.body?.choices?.[0]?.message?.content, "Hello from the fake upstream.");
    const sent = await waitFor(() => glm.seen.find((r) => r.method === "POST"), { what: "the chat request at the fake" });
    assert.equal(sent.path, "/chat/completions");
    assert.equal(sent.authorization, `Bearer ${GLM_KEY}`);
    assert.equal(JSON.parse(sent.body).model, "glm-4.6");
    assert.deepEqual(problems, [], "no page errors or failed calls");
  });
});

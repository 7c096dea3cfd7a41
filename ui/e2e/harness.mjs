// The browser end-to-end test's harness: starts the fake upstream and a real
// `switchyard serve` (with the built UI) on loopback, drives Debian's chromium
// through playwright-core, and talks to the management and client APIs directly.
//
// Prerequisites: `cargo build -p switchyard-gateway -p switchyard-testkit --bins`
// and `npm run ui:build`. Binaries: $SWITCHYARD_BIN / $FAKE_UPSTREAM_BIN, else
// `${CARGO_TARGET_DIR || "target"}/debug/{switchyard,fake-upstream}`; the browser:
// $CHROMIUM_BIN, else /usr/bin/chromium. Screenshots: $E2E_SCREENSHOT_DIR, else
// docs/screenshots/.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const MANAGEMENT_TOKEN = "sym-e2e-token";
export const CLIENT_KEY = "sy-e2e-client-key-0001";
export const MODEL = "claude-sonnet-4-6";

/** An OpenAI Chat Completions answer, as the fake upstreams send it. */
export const chatCompletion = (model) => ({
  id: "chatcmpl-e2e",
  object: "chat.completion",
  created: 0,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "Hello from the fake upstream." }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 6, total_tokens: 7 },
});

const targetDir = resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR || "target");
export const SWITCHYARD_BIN = resolve(REPO_ROOT, process.env.SWITCHYARD_BIN || join(targetDir, "debug", "switchyard"));
export const FAKE_UPSTREAM_BIN = resolve(
  REPO_ROOT,
  process.env.FAKE_UPSTREAM_BIN || join(targetDir, "debug", "fake-upstream"),
);
export const CHROMIUM_BIN = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
export const UI_DIR = join(REPO_ROOT, "ui", "dist");
export const SCREENSHOT_DIR = resolve(REPO_ROOT, process.env.E2E_SCREENSHOT_DIR || join("docs", "screenshots"));

/** Fails early, naming the missing build step. */
export function checkPrerequisites() {
  const missing = [
    [SWITCHYARD_BIN, "cargo build -p switchyard-gateway --bins"],
    [FAKE_UPSTREAM_BIN, "cargo build -p switchyard-testkit --bins"],
    [join(UI_DIR, "index.html"), "npm run ui:build"],
    [CHROMIUM_BIN, "apt-get install chromium"],
  ].filter(([path]) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(`missing prerequisites:\n${missing.map(([p, fix]) => `  ${p} (run: ${fix})`).join("\n")}`);
  }
}

/** An error that stops `waitFor` at once (a child exited, say). */
export class Fatal extends Error {}

/**
 * Polls `check` (sync or async) until it returns a truthy value; returns it. Errors
 * count as "not yet", except a `Fatal`, which is thrown at once.
 */
export async function waitFor(check, { timeout = 10_000, interval = 50, what = "condition" } = {}) {
  const deadline = Date.now() + timeout;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (e) {
      if (e instanceof Fatal) throw e;
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const cause = lastError ? `: ${lastError.message}` : "";
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${cause}`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** A free loopback port (bound on 0, then released). */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** Keeps the last lines a child wrote, for failure messages. */
function tail(stream, lines) {
  const rl = createInterface({ input: stream });
  rl.on("line", (line) => {
    lines.push(line);
    if (lines.length > 200) lines.shift();
  });
  return rl;
}

/** A spawned child with its output kept; `stop()` ends it (SIGTERM, then SIGKILL). */
class Child {
  constructor(name, bin, args, options = {}) {
    this.name = name;
    this.output = [];
    this.proc = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], ...options });
    // A last resort if the test process ends without `stop()`.
    const reap = () => this.running && this.proc.kill("SIGKILL");
    process.once("exit", reap);
    this.proc.once("exit", () => process.off("exit", reap));
    this.exited = new Promise((r) => this.proc.once("exit", (code, signal) => r({ code, signal })));
    this.proc.once("error", (e) => this.output.push(`spawn error: ${e.message}`));
    this.stdout = tail(this.proc.stdout, this.output);
    tail(this.proc.stderr, this.output);
  }

  get running() {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  log() {
    return `--- ${this.name} output (last lines) ---\n${this.output.slice(-40).join("\n")}`;
  }

  async stop() {
    if (!this.running) return;
    this.proc.stdin.end();
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 3_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Starts `fake-upstream`; resolves with its provider and control URLs. */
export async function startFakeUpstream() {
  const child = new Child("fake-upstream", FAKE_UPSTREAM_BIN, []);
  const urls = {};
  await waitFor(
    () => {
      for (const line of child.output) {
        const m = /^(listening|control) on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
        if (m) urls[m[1]] = m[2];
      }
      if (!child.running) throw new Fatal(`${child.name} exited early\n${child.log()}`);
      return urls.listening && urls.control;
    },
    { timeout: 10_000, what: "fake-upstream to print its addresses" },
  );
  const control = async (path, body) => {
    const res = await fetch(`${urls.control}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`fake-upstream ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return {
    child,
    url: urls.listening,
    /** Queues one reply `{status, headers?, body?}`. */
    push: (reply) => control("/__control/push", reply),
    /** Replaces the default reply. */
    setDefault: (reply) => control("/__control/default", reply),
    /** Requests the fake has received. */
    calls: async () => (await control("/__control/calls")).calls,
    /** Requests received and not answered yet (held ones included). */
    inFlight: async () => (await control("/__control/calls")).inFlight,
    /** Lets held replies through: `{n: N}` the N longest-held, `{all: true}` every one, now and later. */
    release: (body) => control("/__control/release", body),
    stop: () => child.stop(),
  };
}

/** The gateway's TOML config: one client key, a Claude OAuth connection, an API-key fallback. */
export function gatewayConfig(upstreamUrl) {
  return `[gateway]
allow_unauthenticated_loopback = false

[[api_keys]]
name = "ide"
key = "${CLIENT_KEY}"

[[connections]]
id = "claude-a"
provider = "anthropic"
api_format = "anthropic"
name = "claude-a"
auth = "oauth"
access_token = "oat-a"
base_url = "${upstreamUrl}"
priority = 1
enabled = true
[connections.provider_specific]
lowPriorityMode = false
autoLimitReset = false

[[connections]]
id = "key-b"
provider = "anthropic"
api_format = "anthropic"
name = "key-b"
auth = "api_key"
api_key = "sk-b"
base_url = "${upstreamUrl}"
priority = 2
enabled = true
`;
}

/**
 * Starts `switchyard serve` on a free port with a temp data dir; waits until it
 * answers. `config` replaces the default TOML config (`gatewayConfig(upstreamUrl)`);
 * `env` adds environment variables (`SWITCHYARD_PRESET_GLM_BASE_URL`, say).
 */
export async function startGateway(upstreamUrl, { uiDir = UI_DIR, config, env: extraEnv = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-e2e-"));
  const configPath = join(dir, "switchyard.toml");
  writeFileSync(configPath, config ?? gatewayConfig(upstreamUrl));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { ...process.env, SWITCHYARD_LOG: process.env.SWITCHYARD_LOG || "info", ...extraEnv };
  delete env.SWITCHYARD_DATA_DIR;
  delete env.SWITCHYARD_CONFIG;
  delete env.SWITCHYARD_MANAGEMENT_TOKEN;
  delete env.SWITCHYARD_UI_DIR;
  const child = new Child(
    "switchyard",
    SWITCHYARD_BIN,
    [
      "serve",
      "--data-dir",
      join(dir, "data"),
      "--config",
      configPath,
      "--listen",
      `127.0.0.1:${port}`,
      "--management-token",
      MANAGEMENT_TOKEN,
      ...(uiDir ? ["--ui-dir", uiDir] : []),
    ],
    { env },
  );
  const gateway = {
    child,
    dir,
    baseUrl,
    uiUrl: `${baseUrl}/ui/#token=${MANAGEMENT_TOKEN}`,
    /** A management API call; resolves with `{status, body}`. */
    async api(method, path, body) {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${MANAGEMENT_TOKEN}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = text;
      }
      return { status: res.status, body: json };
    },
    /** A management GET that must answer 200; resolves with the body. */
    async get(path) {
      const { status, body } = await gateway.api("GET", path);
      if (status !== 200) throw new Error(`GET ${path}: ${status} ${JSON.stringify(body)}`);
      return body;
    },
    /**
     * A client request to /v1/messages, with any extra `headers` (an agent's session
     * id or its own client key, say); resolves with `{status, body, connection, error}`
     * (the connection that answered, from `x-switchyard-connection`; the gateway's
     * error code, from `x-switchyard-error`).
     */
    async message(content = "hi", { headers = {} } = {}) {
      const res = await fetch(`${baseUrl}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": CLIENT_KEY,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
          ...headers,
        },
        body: JSON.stringify({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content }] }),
      });
      return {
        status: res.status,
        connection: res.headers.get("x-switchyard-connection"),
        error: res.headers.get("x-switchyard-error"),
        body: await res.json().catch(() => null),
      };
    },
    /**
     * A client request to /v1/chat/completions; resolves with `{status, body,
     * connection}` (the connection that answered, from `x-switchyard-connection`).
     */
    async chat(model, content = "hi") {
      const res = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${CLIENT_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: "user", content }] }),
      });
      return {
        status: res.status,
        connection: res.headers.get("x-switchyard-connection"),
        body: await res.json().catch(() => null),
      };
    },
    async stop() {
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(
      async () => {
        if (!child.running) throw new Fatal(`${child.name} exited early\n${child.log()}`);
        return (await gateway.api("GET", "/api/gateway")).status === 200;
      },
      { timeout: 20_000, interval: 100, what: `the gateway at ${baseUrl}` },
    );
  } catch (e) {
    await gateway.stop();
    throw e;
  }
  return gateway;
}

/** Launches headless chromium with a fresh profile. */
export async function launchBrowser() {
  const { chromium } = await import("playwright-core");
  const profile = mkdtempSync(join(tmpdir(), "switchyard-e2e-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_BIN,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Launches the browser and signs its page in to the gateway's UI (the token comes in
 * the URL and is kept for the session); page errors, console errors and failed HTTP
 * calls go to `problems`. Resolves with `{browser, page}`.
 */
export async function openUi(gw, problems) {
  const browser = await launchBrowser();
  try {
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.setDefaultTimeout(10_000);
    watchProblems(page, problems);
    await page.goto(gw.uiUrl);
    await waitFor(() => !page.url().includes("token="), { what: "the token to leave the URL" });
    await page.getByRole("navigation", { name: "Pages" }).waitFor();
    return { browser, page };
  } catch (e) {
    await browser.close();
    throw e;
  }
}

/**
 * The setup most browser tests share: prerequisites checked, the screenshot folder
 * made, one fake upstream (and one more per name in `moreFakes`, in `fakes`), a
 * gateway in front of them (`config(upstreamUrl, fakes)` replaces the default TOML
 * config) and the browser signed in to its UI. Resolves with `{fake, fakes, gw,
 * browser, page, problems, stop}`; `stop()` ends them all, each on its own (one
 * failing must not leave the others running). E2E_VERBOSE=1 prints the gateway's and
 * the fake upstreams' output then. `env` goes to the gateway (see `startGateway`).
 */
export async function startStack({ config, env, moreFakes = [] } = {}) {
  checkPrerequisites();
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  /** Page errors, console errors and failed HTTP calls seen by the browser. */
  const stack = { problems: [], fakes: {} };
  const fakes = () => [stack.fake, ...Object.values(stack.fakes)].filter(Boolean);
  stack.stop = async () => {
    if (process.env.E2E_VERBOSE) console.log(`${fakes().map((f) => f.child.log()).join("\n")}\n${stack.gw?.child.log()}`);
    await stack.browser?.close().catch(() => {});
    await stack.gw?.stop().catch(() => {});
    for (const f of fakes()) await f.stop().catch(() => {});
  };
  try {
    stack.fake = await startFakeUpstream();
    for (const name of moreFakes) stack.fakes[name] = await startFakeUpstream();
    stack.gw = await startGateway(stack.fake.url, { config: config?.(stack.fake.url, stack.fakes), env });
    Object.assign(stack, await openUi(stack.gw, stack.problems));
  } catch (e) {
    await stack.stop();
    throw e;
  }
  return stack;
}

/** Records `page`'s errors, console errors and failed HTTP calls in `problems`. */
export function watchProblems(page, problems) {
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    // Failed loads are recorded with their URL below.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.request().method()} ${new URL(r.url()).pathname} → ${r.status()}`);
  });
}

/** Opens a page of the UI through the hash router and waits for its heading. */
export async function openRoute(page, baseUrl, route, heading) {
  await page.goto(`${baseUrl}/ui/#/${route}`);
  const h1 = page.getByRole("heading", { level: 1, name: heading });
  await h1.waitFor();
  // A hash change keeps the document, and with it the previous page's scroll.
  await h1.evaluate((el) => {
    for (let n = el; n; n = n.parentElement) n.scrollTop = 0;
    window.scrollTo(0, 0);
  });
}

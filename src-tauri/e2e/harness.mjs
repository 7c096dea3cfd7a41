// Shared by the real-app e2e tests: binaries, child processes in their own
// process groups (cleanup takes tauri-driver's WebKitWebDriver along), free
// ports, waiting, and a WebDriver session on the built desktop app.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { remote } from "webdriverio";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const targetDir = path.resolve(root, process.env.CARGO_TARGET_DIR || "target");
export const appBin = process.env.SWITCHYARD_DESKTOP_BIN || path.join(targetDir, "debug", "switchyard-desktop");
export const fakeBin = process.env.FAKE_UPSTREAM_BIN || path.join(targetDir, "debug", "fake-upstream");
const driverBin = process.env.TAURI_DRIVER || "tauri-driver";

const children = [];

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Spawns a child in its own process group. */
export function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"],
    detached: true,
  });
  children.push(child);
  return child;
}

/** The first stdout line matching `re`. */
export async function lineMatching(child, re) {
  let buffer = "";
  for await (const chunk of child.stdout) {
    buffer += chunk.toString();
    const m = buffer.match(re);
    if (m) return m;
  }
  throw new Error(`process ended before printing ${re}`);
}

export async function waitFor(what, fn, timeoutMs = 20000) {
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

/**
 * Starts tauri-driver with `env` (the app inherits it) and opens a WebDriver
 * session on the desktop binary: the app starts and its window is the session.
 */
export async function launchApp(env) {
  const driverPort = await freePort();
  start(driverBin, ["--port", String(driverPort)], env);
  await waitFor("tauri-driver", async () => (await fetch(`http://127.0.0.1:${driverPort}/status`)).ok);
  return remote({
    hostname: "127.0.0.1",
    port: driverPort,
    logLevel: "warn",
    capabilities: {
      browserName: "wry",
      "wdio:enforceWebDriverClassic": true,
      "tauri:options": { application: appBin },
    },
  });
}

/** Ends the session and stops every child (whole process groups). */
export async function stopAll(browser) {
  await browser?.deleteSession().catch(() => {});
  for (const child of children.splice(0).reverse()) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
  }
}

/**
 * The pid of the running desktop app whose environment holds `marker` (e.g. its
 * `SWITCHYARD_PORT=…`): tauri-driver's WebKitWebDriver starts it, so the test has
 * no handle on it. Null when none runs.
 */
export function appPid(marker) {
  const exe = realpathSync(appBin);
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/exe`) !== exe) continue;
      if (readFileSync(`/proc/${entry}/environ`, "latin1").split("\0").includes(marker)) return Number(entry);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return null;
}

/**
 * The executable code of process `pid`, from its smaps: each of the binary's code
 * mappings and each anonymous code mapping right before, between or after them
 * (where switchyard-huge-text puts a moved chunk), as
 * `{ start, end, anonymous, hugeKb }` (hugeKb: its AnonHugePages).
 */
export function codeMappings(pid) {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const all = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = line.match(/^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/);
    if (head) {
      all.push({ start: parseInt(head[1], 16), end: parseInt(head[2], 16), code: head[3] === "r-xp", path: head[4], hugeKb: 0 });
    } else if (line.startsWith("AnonHugePages:") && all.length > 0) {
      all[all.length - 1].hugeKb = parseInt(line.split(/\s+/)[1], 10);
    }
  }
  const exeCode = all.filter((m) => m.code && m.path === exe);
  const touches = (m) => exeCode.some((e) => e.end === m.start || e.start === m.end);
  return all
    .filter((m) => m.code && (m.path === exe || (m.path === "" && touches(m))))
    .map(({ start, end, path, hugeKb }) => ({ start, end, anonymous: path === "", hugeKb }))
    .sort((a, b) => a.start - b.start);
}

/** Transparent huge pages on request, 2 MB each (what the binary's alignment is for). */
export function hugePagesOn() {
  const read = (f) => {
    try {
      return readFileSync(`/sys/kernel/mm/transparent_hugepage/${f}`, "utf8");
    } catch {
      return "";
    }
  };
  return /\[(always|madvise)\]/.test(read("enabled")) && read("hpage_pmd_size").trim() === "2097152";
}

/** The pids of the WebKit web processes desktop app `pid` started (one per live webview). */
export function webProcesses(pid) {
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1");
      // "pid (comm) state ppid ...": comm may hold spaces, so split after its ')'.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid && comm.startsWith("WebKitWebProces")) found.push(Number(entry));
    } catch {
      // Gone.
    }
  }
  return found;
}

/** The names of process `pid`'s threads. */
export function threadNames(pid) {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    } catch {
      return "";
    }
  });
}

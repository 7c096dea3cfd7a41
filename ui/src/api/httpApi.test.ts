import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "./ApiError";
import { createHttpApi } from "./httpApi";
import { backoffDelay, parseSseFrames, subscribeSse } from "./sse";
import { EVENT_NAMES } from "./types";

type Seen = { url: string; method: string; headers: Record<string, string>; body: unknown };

function fakeFetch(respond: (req: Seen) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const impl = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const req: Seen = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
    };
    seen.push(req);
    return respond(req);
  });
  return { impl: impl as unknown as typeof fetch, seen };
}

const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });

describe("httpApi", () => {
  it("sends the bearer token and parses JSON", async () => {
    const { impl, seen } = fakeFetch(() => json([{ id: "a" }]));
    const api = createHttpApi("http://127.0.0.1:7821/", "tok-123", { fetchImpl: impl });
    await expect(api.connectionsList()).resolves.toEqual([{ id: "a" }]);
    expect(seen[0].url).toBe("http://127.0.0.1:7821/api/providers");
    expect(seen[0].method).toBe("GET");
    expect(seen[0].headers.Authorization).toBe("Bearer tok-123");
  });

  it("maps every operation to its REST twin", async () => {
    const { impl, seen } = fakeFetch(() => json({}));
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await api.connectionsUpdate("a/b", { name: "x" } as never, 3);
    await api.connectionsTest("c1");
    await api.cooldownsList("glm");
    await api.cooldownsList(null);
    await api.cooldownsClear({ connectionIds: ["c1"], all: false, provider: null });
    await api.lockoutsClear({ provider: "glm", connection: "c1", model: "glm-5" });
    await api.breakersReset({ provider: null });
    await api.logsList({ limit: 10, beforeId: null });
    await api.resilienceRanges();
    await api.modelLockoutPatch({ enabled: true } as never, 9);
    await api.gatewaySetPaused({ paused: true });
    await api.rateLimitsGet();
    await api.sessionsList();
    await api.sessionsClear({ connection: "c1" });
    await api.sessionsClear({});
    await api.leasesList();
    await api.leasesRelease(7);
    expect(seen.map((s) => `${s.method} ${s.url.replace("http://gw", "")}`)).toEqual([
      "PATCH /api/providers/a%2Fb",
      "POST /api/providers/c1/test",
      "GET /api/resilience/cooldowns?provider=glm",
      "GET /api/resilience/cooldowns",
      "POST /api/resilience/cooldowns",
      "DELETE /api/resilience/model-cooldowns",
      "POST /api/resilience/reset",
      "GET /api/logs?limit=10",
      "GET /api/resilience/ranges",
      "PATCH /api/resilience/model-lockout",
      "POST /api/gateway/pause",
      "GET /api/rate-limits",
      "GET /api/sessions",
      "DELETE /api/sessions",
      "DELETE /api/sessions",
      "GET /api/leases",
      "DELETE /api/leases/7",
    ]);
    expect(seen[5].body).toEqual({ provider: "glm", connection: "c1", model: "glm-5" });
    expect(seen.slice(-4, -2).map((s) => s.body)).toEqual([{ connection: "c1" }, {}]);
    expect(seen.at(-1)?.body).toBeUndefined();
    expect(seen[5].headers["Content-Type"]).toBe("application/json");
    expect(api.desktopPrefsGet).toBeUndefined();
    expect(api.desktopStatus).toBeUndefined();
  });

  it("reads the request log with its filters as query parameters, one request by id, and the presets", async () => {
    const { impl, seen } = fakeFetch(() => json([]));
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await api.requestsList({ limit: 50, before: "r/9", status: "429", connection: null, model: "glm-5", key: null, since: 1000, until: null });
    await api.requestsList({});
    await api.requestGet("a/b c");
    await api.presetsList();
    expect(seen.map((s) => `${s.method} ${s.url.replace("http://gw", "")}`)).toEqual([
      "GET /api/requests?limit=50&before=r%2F9&status=429&model=glm-5&since=1000",
      "GET /api/requests",
      "GET /api/requests/a%2Fb%20c",
      "GET /api/presets",
    ]);
  });

  it("drops absent groups from a resilience patch", async () => {
    const { impl, seen } = fakeFetch(() => json({}));
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await api.resiliencePatch({ sessionAffinityTtlMs: 5, modelLockout: null } as never, null);
    expect(seen[0].body).toEqual({ sessionAffinityTtlMs: 5 });
  });

  it("sends the version a write was made to as If-Match, and none without one", async () => {
    const { impl, seen } = fakeFetch((req) => (req.method === "DELETE" ? new Response(null, { status: 204 }) : json({})));
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await api.resiliencePatch({ sessionAffinityTtlMs: 5 } as never, 7);
    await api.modelLockoutPatch({ enabled: true } as never, 8);
    await api.connectionsUpdate("c1", { name: "x" } as never, 3);
    await api.connectionsDelete("c1", 4);
    await api.combosPut({ name: "fast", strategy: "priority", targets: [] }, 0);
    await api.combosDelete("fast", 5);
    await api.aliasesPut({ from: "a", to: "b" } as never, 6);
    await api.aliasesDelete("a", 2);
    await api.resiliencePatch({ sessionAffinityTtlMs: 5 } as never, null);
    expect(seen.map((s) => `${s.method} ${s.url.replace("http://gw", "")} ${s.headers["If-Match"] ?? "-"}`)).toEqual([
      'PATCH /api/resilience "7"',
      'PATCH /api/resilience/model-lockout "8"',
      'PATCH /api/providers/c1 "3"',
      'DELETE /api/providers/c1 "4"',
      'POST /api/combos "0"',
      'DELETE /api/combos/fast "5"',
      'POST /api/aliases "6"',
      'DELETE /api/aliases/a "2"',
      "PATCH /api/resilience -",
    ]);
  });

  it("reads versioned documents and keeps the version out of a combo or alias body", async () => {
    const { impl, seen } = fakeFetch((req) =>
      req.method === "GET"
        ? json({ ...{ sessionAffinityTtlMs: 0 }, version: 12 })
        : json({ name: "fast", strategy: "priority", targets: [], version: 4 }),
    );
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await expect(api.resilienceGet()).resolves.toMatchObject({ version: 12 });
    const stored = { name: "fast", strategy: "priority" as const, targets: [], version: 3 };
    await expect(api.combosPut(stored, stored.version)).resolves.toMatchObject({ version: 4 });
    expect(seen[1].body).toEqual({ name: "fast", strategy: "priority", targets: [] });
    expect(seen[1].headers["If-Match"]).toBe('"3"');
  });

  it("maps a 412 to ApiError precondition_failed, with or without an error document", async () => {
    const { impl } = fakeFetch(() =>
      json(
        {
          error: {
            code: "precondition_failed",
            message: "the settings changed since version 7 (now 8)",
            issues: [],
          },
        },
        412,
      ),
    );
    const err = await createHttpApi("http://gw", "t", { fetchImpl: impl })
      .resiliencePatch({} as never, 7)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: "precondition_failed", status: 412, isPreconditionFailed: true });

    const { impl: bare } = fakeFetch(() => new Response("", { status: 412, statusText: "Precondition Failed" }));
    const bareErr = await createHttpApi("http://gw", "t", { fetchImpl: bare })
      .connectionsUpdate("c1", {} as never, 1)
      .catch((e: unknown) => e);
    expect(bareErr).toMatchObject({ code: "precondition_failed", status: 412, isPreconditionFailed: true });
  });

  it("resolves 204 with null", async () => {
    const { impl } = fakeFetch(() => new Response(null, { status: 204 }));
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    await expect(api.connectionsDelete("c1", 2)).resolves.toBeNull();
  });

  it("turns the error document into an ApiError with issues", async () => {
    const { impl } = fakeFetch(() =>
      json(
        {
          error: {
            code: "validation_failed",
            message: "1 invalid field",
            issues: [{ path: "/modelLockout/baseCooldownMs", message: "must be a whole number from 5,000 to 600,000 ms" }],
          },
        },
        400,
      ),
    );
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl });
    const err = await api.resiliencePatch({} as never, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      code: "validation_failed",
      message: "1 invalid field",
      status: 400,
      issues: [{ path: "/modelLockout/baseCooldownMs", message: "must be a whole number from 5,000 to 600,000 ms" }],
    });
  });

  it("reports a rejected token and non-JSON failures", async () => {
    const onUnauthorized = vi.fn();
    const { impl } = fakeFetch(() =>
      json({ error: { code: "management_unauthorized", message: "bad token", issues: [] } }, 401),
    );
    const api = createHttpApi("http://gw", "t", { fetchImpl: impl, onUnauthorized });
    await expect(api.keysList()).rejects.toMatchObject({ code: "management_unauthorized" });
    expect(onUnauthorized).toHaveBeenCalledOnce();

    const { impl: html } = fakeFetch(() => new Response("<html>oops</html>", { status: 502, statusText: "Bad Gateway" }));
    await expect(createHttpApi("http://gw", "t", { fetchImpl: html }).keysList()).rejects.toMatchObject({
      code: "http_502",
      status: 502,
    });
  });

  it("reports an unreachable gateway", async () => {
    const impl = vi.fn(async () => {
      throw new TypeError("Failed to fetch");
    }) as unknown as typeof fetch;
    await expect(createHttpApi("http://gw", "t", { fetchImpl: impl }).gatewayStatus()).rejects.toMatchObject({
      code: "network_error",
    });
  });
});

describe("SSE", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("parses complete frames and keeps the rest", () => {
    const { frames, rest } = parseSseFrames(
      ": keep-alive\n\nevent: breakersChanged\ndata: {\"at\":1}\n\nevent: lanesChanged\r\ndata: {}\r\n\r\nevent: cool",
    );
    expect(frames).toEqual([
      { event: "breakersChanged", data: '{"at":1}' },
      { event: "lanesChanged", data: "{}" },
    ]);
    expect(rest).toBe("event: cool");
  });

  it("backs off exponentially up to a cap", () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n))).toEqual([1000, 2000, 4000, 8000, 30_000]);
  });

  it("streams named events with the bearer header", async () => {
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode("event: cooldownsChanged\ndata: {\"at\":1}\n\nevent: unknownThing\ndata: x\n\nevent: settings"));
        c.enqueue(encoder.encode("Changed\ndata: {}\n\n"));
      },
    });
    const { impl, seen } = fakeFetch(() => new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } }));
    const events: string[] = [];
    const modes: string[] = [];
    const stop = subscribeSse({
      url: "http://gw/api/events",
      token: "tok",
      fetchImpl: impl,
      onEvent: (n) => events.push(n),
      onMode: (m) => modes.push(m),
    });
    await vi.waitFor(() => expect(events).toEqual(["cooldownsChanged", "settingsChanged"]));
    expect(seen[0].headers.Authorization).toBe("Bearer tok");
    expect(modes[0]).toBe("push");
    stop();
  });

  it("falls back to refreshing every 5 s while the stream is down, and reconnects", async () => {
    vi.useFakeTimers();
    let attempts = 0;
    const { impl } = fakeFetch(() => {
      attempts += 1;
      return new Response("not found", { status: 404 });
    });
    const events: string[] = [];
    const modes: string[] = [];
    const stop = subscribeSse({
      url: "http://gw/api/events",
      token: "tok",
      fetchImpl: impl,
      onEvent: (n) => events.push(n),
      onMode: (m) => modes.push(m),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(modes).toEqual(["polling"]);
    expect(attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(5000);
    // Every topic once, leases included.
    expect([...events].sort()).toEqual([...EVENT_NAMES].sort());
    expect(attempts).toBeGreaterThanOrEqual(3); // retried after 1 s and 2 s
    stop();
    const count = events.length;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(events).toHaveLength(count);
  });
});

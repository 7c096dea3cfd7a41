import { describe, expect, it } from "vitest";
import { formatRange, rangeLookup } from "./ranges";
import {
  buildPatch,
  draftFrom,
  getAtPointer,
  issuePaths,
  parseIntList,
  parseWholeNumber,
  type SettingField,
} from "./settingsForm";

const doc = {
  providerBreaker: {
    oauth: { failureThreshold: 8, resetTimeoutMs: 60_000, cooldownByKind: { timeout: 5000 } },
    apikey: { failureThreshold: 12, resetTimeoutMs: 30_000, cooldownByKind: {} },
  },
  modelLockout: { enabled: false, errorCodes: [429, 503] },
  sessionAffinityTtlMs: 0,
};

const fields: SettingField[] = [
  { kind: "int", path: "/providerBreaker/oauth/failureThreshold", label: "Failure threshold" },
  { kind: "int", path: "/providerBreaker/oauth/cooldownByKind/timeout", label: "Timeout (ms)", optional: true },
  { kind: "int", path: "/providerBreaker/oauth/cooldownByKind/serverError", label: "Server error (ms)", optional: true },
  { kind: "bool", path: "/modelLockout/enabled", label: "Enabled" },
  { kind: "intList", path: "/modelLockout/errorCodes", label: "Error codes" },
  { kind: "int", path: "/sessionAffinityTtlMs", label: "Session affinity TTL (ms)" },
];

describe("settings forms", () => {
  it("reads a draft from a document", () => {
    expect(draftFrom(doc, fields)).toEqual({
      "/providerBreaker/oauth/failureThreshold": "8",
      "/providerBreaker/oauth/cooldownByKind/timeout": "5000",
      "/providerBreaker/oauth/cooldownByKind/serverError": "",
      "/modelLockout/enabled": false,
      "/modelLockout/errorCodes": "429, 503",
      "/sessionAffinityTtlMs": "0",
    });
  });

  it("builds whole-group patches with the draft applied", () => {
    const draft = {
      ...draftFrom(doc, fields),
      "/providerBreaker/oauth/failureThreshold": "0",
      "/providerBreaker/oauth/cooldownByKind/timeout": "",
      "/modelLockout/errorCodes": "403,404 429",
      "/sessionAffinityTtlMs": "60000",
    };
    const { patch, errors } = buildPatch(doc, fields, draft);
    expect(errors).toEqual({});
    expect(patch).toEqual({
      providerBreaker: {
        oauth: { failureThreshold: 0, resetTimeoutMs: 60_000, cooldownByKind: { timeout: null, serverError: null } },
        apikey: { failureThreshold: 12, resetTimeoutMs: 30_000, cooldownByKind: {} },
      },
      modelLockout: { enabled: false, errorCodes: [403, 404, 429] },
      sessionAffinityTtlMs: 60_000,
    });
    // The source document is never mutated.
    expect(getAtPointer(doc, "/providerBreaker/oauth/cooldownByKind/timeout")).toBe(5000);
  });

  it("reports text that cannot be sent as a number", () => {
    const draft = { ...draftFrom(doc, fields), "/sessionAffinityTtlMs": "1.5", "/modelLockout/errorCodes": "429, x" };
    const { errors } = buildPatch(doc, fields, draft);
    expect(Object.keys(errors).sort()).toEqual(["/modelLockout/errorCodes", "/sessionAffinityTtlMs"]);
  });

  it("parses integer lists", () => {
    expect(parseIntList("403, 404\n429")).toEqual([403, 404, 429]);
    expect(parseIntList("")).toEqual([]);
    expect(parseIntList("4o4")).toBeNull();
  });

  it("formats ranges and looks list items up by their * row", () => {
    const lookup = rangeLookup([
      { path: "/a", kind: "integer", min: 1000, max: 86_400_000, unit: "ms", allowed: [] },
      { path: "/b/*", kind: "integer", min: 100, max: 599, unit: null, allowed: [] },
      { path: "/c", kind: "list", min: 1, max: 32, unit: null, allowed: [] },
    ]);
    expect(formatRange(lookup("/a"))).toBe("1,000–86,400,000 ms (1 s–1 d)");
    expect(formatRange(lookup("/b/3"))).toBe("100–599");
    expect(formatRange(lookup("/c"))).toBe("1–32 items");
    expect(formatRange(lookup("/missing"))).toBe("Allowed range not published");
  });

  it("parses a whole-number field", () => {
    expect(parseWholeNumber(" 250 ", false)).toEqual({ value: 250 });
    expect(parseWholeNumber("-5", false)).toEqual({ value: -5 });
    expect(parseWholeNumber("", true)).toEqual({ value: null });
    expect(parseWholeNumber("", false)).toEqual({ error: "Enter a whole number." });
    expect(parseWholeNumber("1.5", true)).toEqual({ error: "Enter a whole number (no units or decimals)." });
    expect(parseWholeNumber("5s", true)).toEqual({ error: "Enter a whole number (no units or decimals)." });
  });

  describe("a map of caps (one value: its patch replaces the whole map)", () => {
    const caps: SettingField = {
      kind: "capMap",
      path: "/providerConcurrency",
      label: "Provider caps",
      entries: { noun: "provider", example: "glm=2" },
    };

    it("reads the map one id=cap per line, and an absent map as empty", () => {
      expect(draftFrom({ providerConcurrency: { glm: 2, "a/b": 5 } }, [caps])).toEqual({
        "/providerConcurrency": "glm=2\na/b=5",
      });
      expect(draftFrom({}, [caps])).toEqual({ "/providerConcurrency": "" });
    });

    it("sends the whole map, entries left out removed", () => {
      const stored = { providerConcurrency: { glm: 2, kimi: 1 } };
      const built = buildPatch(stored, [caps], { "/providerConcurrency": "glm = 3, openrouter=0" });
      expect(built).toEqual({ patch: { providerConcurrency: { glm: 3, openrouter: 0 } }, errors: {} });
      expect(buildPatch(stored, [caps], { "/providerConcurrency": " " }).patch).toEqual({ providerConcurrency: {} });
    });

    it("refuses lines that are no id=cap, naming each", () => {
      const built = buildPatch({}, [caps], { "/providerConcurrency": "glm\nkimi=-1" });
      expect(built.errors).toEqual({
        "/providerConcurrency":
          "Line 1: write provider=cap, e.g. glm=2 (“glm”). Line 2: the cap of kimi must be a whole number.",
      });
    });

    it("claims the issue path of every entry the draft names", () => {
      expect(issuePaths([caps, fields[0]], { "/providerConcurrency": "glm=2\na/b=1" })).toEqual([
        "/providerConcurrency",
        "/providerConcurrency/glm",
        "/providerConcurrency/a~1b",
        "/providerBreaker/oauth/failureThreshold",
      ]);
    });
  });
});

import { describe, expect, it } from "vitest";
import type { ComboView } from "../../ipc/bindings";
import * as f from "../../test/fixtures";
import { buildCombo, move, type ComboForm } from "./form";
import { comboReaches, resolveModel, resolveTarget, routableNames } from "./routing";

const conns = [
  f.connection({ id: "g2", provider: "glm", priority: 2, models: ["glm-5", "glm-4.6"] }),
  f.connection({ id: "g1", provider: "glm", priority: 1, models: [] }),
  f.connection({ id: "z1", provider: "zai", priority: 0, models: ["glm-5"] }),
  f.connection({ id: "a1", provider: "anthropic", models: [], enabled: false }),
];
const combo = (name: string, models: string[], strategy: ComboView["strategy"] = "priority"): ComboView => ({
  name,
  strategy,
  targets: models.map((model) => ({ model, connection: null })),
});
const ids = (r: ReturnType<typeof resolveTarget>) => (r.kind === "none" ? null : r.runs.map((x) => `${x.connection.id}:${x.model}`));

describe("combo target routing (as the gateway resolves it)", () => {
  it("resolves provider/model, catalogue ids and known prefixes", () => {
    expect(resolveModel("glm/glm-9", conns)).toEqual({ providers: ["glm"], model: "glm-9" });
    // Every provider whose catalogue lists it, best priority first.
    expect(resolveModel("glm-5", conns)).toEqual({ providers: ["zai", "glm"], model: "glm-5" });
    expect(resolveModel("claude-sonnet-4-5", conns)).toEqual({ providers: ["anthropic"], model: "claude-sonnet-4-5" });
    // No openai connection: a gpt-* id does not resolve; nor does an unknown provider.
    expect(resolveModel("gpt-4o", conns)).toBeNull();
    expect(resolveModel("mistral/large", conns)).toBeNull();
    expect(resolveModel("glm/", conns)).toBeNull();
  });

  it("runs a target on every connection of its providers in priority order, or on its pin", () => {
    expect(ids(resolveTarget({ model: "glm-5" }, conns, []))).toEqual(["z1:glm-5", "g1:glm-5", "g2:glm-5"]);
    expect(ids(resolveTarget({ model: "glm/glm-5", connection: "g2" }, conns, []))).toEqual(["g2:glm-5"]);
    expect(resolveTarget({ model: "glm/glm-5", connection: "z1" }, conns, [])).toMatchObject({
      kind: "model",
      runs: [],
      pinMismatch: true,
    });
    // Disabled connections are listed (their badge says so).
    expect(ids(resolveTarget({ model: "claude-x" }, conns, []))).toEqual(["a1:claude-x"]);
    expect(resolveTarget({ model: "nothing" }, conns, [])).toEqual({ kind: "none" });
  });

  it("expands a combo target into its targets, once each, and stops at cycles", () => {
    const combos = [
      combo("inner", ["glm/glm-4.6", "zai/glm-5"]),
      combo("outer", ["inner", "glm/glm-4.6", "outer"]),
    ];
    const r = resolveTarget({ model: "inner" }, conns, combos, "outer");
    expect(r.kind).toBe("combo");
    expect(ids(r)).toEqual(["g1:glm-4.6", "g2:glm-4.6", "z1:glm-5"]);
    expect(ids(resolveTarget({ model: "outer" }, conns, combos, "outer"))).toEqual([]);
    expect(comboReaches("outer", "inner", combos)).toBe(true);
    expect(comboReaches("inner", "outer", combos)).toBe(false);
  });

  it("offers other combos (not those leading back), provider/model pairs and catalogue ids", () => {
    const combos = [combo("a", ["b"]), combo("b", ["glm-5"]), combo("c", ["glm-5"], "random")];
    const names = routableNames(conns, combos, "b");
    expect(names.map((n) => n.value)).toEqual(
      expect.arrayContaining(["c", "glm-4.6", "glm/glm-4.6", "glm-5", "glm/glm-5", "zai/glm-5"]),
    );
    expect(names.map((n) => n.value)).not.toContain("a"); // a → b: a cycle
    expect(names.map((n) => n.value)).not.toContain("b");
    expect(names[0]).toEqual({ value: "c", label: "combo (random)" });
    expect(names.find((n) => n.value === "glm-5")?.label).toBe("catalogue model of glm, zai");
  });
});

describe("combo form", () => {
  const form = (over: Partial<ComboForm> = {}): ComboForm => ({
    name: " coding ",
    strategy: "priority",
    targets: [
      { key: "1", model: "glm-5", connection: "g1", weight: "5" },
      { key: "2", model: "inner", connection: "g2", weight: "" },
    ],
    ...over,
  });

  it("sends weights only for the weighted strategy and no pin on a combo target", () => {
    expect(buildCombo(form(), new Set(["inner"]))).toEqual({
      combo: {
        name: "coding",
        strategy: "priority",
        targets: [
          { model: "glm-5", connection: "g1" },
          { model: "inner", connection: null },
        ],
      },
      errors: {},
    });
    expect(buildCombo(form({ strategy: "weighted" })).combo.targets).toEqual([
      { model: "glm-5", connection: "g1", weight: 5 },
      { model: "inner", connection: "g2" },
    ]);
  });

  it("names what is missing or malformed by path", () => {
    expect(buildCombo(form({ name: "", targets: [] })).errors).toEqual({
      "/name": expect.stringMatching(/Enter the name/),
      "/targets": "Add at least one target.",
    });
    const bad = buildCombo(
      form({ strategy: "weighted", targets: [{ key: "1", model: " ", connection: "", weight: "1.5" }] }),
    );
    expect(Object.keys(bad.errors)).toEqual(["/targets/0/model", "/targets/0/weight"]);
  });

  it("moves a row within bounds", () => {
    expect(move([1, 2, 3], 2, 0)).toEqual([3, 1, 2]);
    expect(move([1, 2, 3], 0, -1)).toEqual([1, 2, 3]);
  });
});

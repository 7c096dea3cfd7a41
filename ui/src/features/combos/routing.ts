// What a combo target runs on, the way the gateway routes it (SPEC §2): another
// combo's name → that combo's targets in their own order; `provider/model` with a
// provider that has connections → that provider's connections; a bare model id in a
// connection's catalogue → the connections of every provider listing it; `claude-*`
// → anthropic, `gpt-*` / `o1`… → openai. A pin keeps only that connection. Pure, for
// the form's suggestions and the page's live per-target state.
import type { ComboTarget, ComboView, ConnectionView } from "../../ipc/bindings";

/** One connection a target can run on, with the model id sent upstream. */
export type Run = { connection: ConnectionView; model: string };

export type TargetResolution =
  /** Another combo: its targets take this place. */
  | { kind: "combo"; runs: Run[] }
  /** A model of one or more providers. */
  | { kind: "model"; providers: string[]; model: string; runs: Run[]; pinMismatch: boolean }
  /** Nothing routable has this name now. */
  | { kind: "none" };

/** How deep combos may nest (the gateway's MAX_COMBO_DEPTH). */
const MAX_DEPTH = 8;

const OPENAI_PREFIXES = ["gpt-", "chatgpt-", "codex-", "o1", "o3", "o4"];

function providerForPrefix(model: string): string | null {
  if (model.startsWith("claude-")) return "anthropic";
  return OPENAI_PREFIXES.some((p) => model.startsWith(p)) ? "openai" : null;
}

function byPriority(a: ConnectionView, b: ConnectionView): number {
  return a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** A name that is not a combo: the providers it routes to and the upstream model id. */
export function resolveModel(name: string, connections: ConnectionView[]): { providers: string[]; model: string } | null {
  const sorted = [...connections].sort(byPriority);
  const providers = new Set(sorted.map((c) => c.provider));
  const slash = name.indexOf("/");
  if (slash >= 0) {
    const provider = name.slice(0, slash);
    const model = name.slice(slash + 1);
    if (model !== "" && providers.has(provider)) return { providers: [provider], model };
  }
  const listing = [...new Set(sorted.filter((c) => c.models.includes(name)).map((c) => c.provider))];
  if (listing.length > 0) return { providers: listing, model: name };
  const prefixed = providerForPrefix(name);
  return prefixed !== null && providers.has(prefixed) ? { providers: [prefixed], model: name } : null;
}

/** The connections of `providers`, in priority order. */
export function connectionsOf(providers: string[], connections: ConnectionView[]): ConnectionView[] {
  return connections.filter((c) => providers.includes(c.provider)).sort(byPriority);
}

function expand(
  target: Pick<ComboTarget, "model" | "connection">,
  connections: ConnectionView[],
  combos: ComboView[],
  path: string[],
): TargetResolution {
  const inner = combos.find((c) => c.name === target.model);
  if (inner) {
    const runs: Run[] = [];
    if (path.length < MAX_DEPTH && !path.includes(inner.name)) {
      for (const t of inner.targets) {
        const r = expand(t, connections, combos, [...path, inner.name]);
        if (r.kind === "none") continue;
        for (const run of r.runs) {
          if (!runs.some((x) => x.connection.id === run.connection.id && x.model === run.model)) runs.push(run);
        }
      }
    }
    return { kind: "combo", runs };
  }
  const resolved = resolveModel(target.model, connections);
  if (resolved === null) return { kind: "none" };
  const all = connectionsOf(resolved.providers, connections);
  const pin = target.connection ?? null;
  const runs = all.filter((c) => pin === null || c.id === pin).map((connection) => ({ connection, model: resolved.model }));
  return { kind: "model", ...resolved, runs, pinMismatch: pin !== null && runs.length === 0 };
}

/** What `target` of the combo `owner` (absent for a new one) runs on now. */
export function resolveTarget(
  target: Pick<ComboTarget, "model" | "connection">,
  connections: ConnectionView[],
  combos: ComboView[],
  owner?: string,
): TargetResolution {
  return expand(target, connections, combos, owner ? [owner] : []);
}

/** Whether the combo `from` leads to the combo `to` (directly or through others). */
export function comboReaches(from: string, to: string, combos: ComboView[]): boolean {
  const stack = [from];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (name === to) return true;
    if (seen.has(name)) continue;
    seen.add(name);
    const combo = combos.find((c) => c.name === name);
    if (combo) stack.push(...combo.targets.map((t) => t.model));
  }
  return false;
}

export type RoutableName = { value: string; label: string };

/**
 * What a target of the combo `owner` may name: the other combos (not those that lead
 * back to it: the gateway refuses cycles), `provider/model` for every catalogue
 * entry, and the bare catalogue ids. Providers without a catalogue still accept any
 * `provider/model`, typed by hand.
 */
export function routableNames(connections: ConnectionView[], combos: ComboView[], owner: string): RoutableName[] {
  const out: RoutableName[] = [];
  for (const c of [...combos].sort((a, b) => a.name.localeCompare(b.name))) {
    if (owner !== "" && (c.name === owner || comboReaches(c.name, owner, combos))) continue;
    out.push({ value: c.name, label: `combo (${c.strategy})` });
  }
  const models = new Map<string, Set<string>>();
  for (const c of connections) {
    for (const m of c.models) {
      if (!models.has(m)) models.set(m, new Set());
      models.get(m)!.add(c.provider);
    }
  }
  const entries: RoutableName[] = [];
  for (const [model, providers] of models) {
    const list = [...providers].sort();
    entries.push({ value: model, label: `catalogue model of ${list.join(", ")}` });
    for (const p of list) entries.push({ value: `${p}/${model}`, label: p });
  }
  entries.sort((a, b) => a.value.localeCompare(b.value));
  const seen = new Set(out.map((n) => n.value));
  return [...out, ...entries.filter((e) => !seen.has(e.value))];
}

// A connection's flow-control overrides (`rateLimitOverrides`) as the form edits
// them: the per-model caps as text, one `model=cap` per line, and the two queue
// budgets. Numbers are sent as typed: the gateway checks the ranges and names a bad
// cap by its model (`/rateLimitOverrides/modelConcurrency/glm-5`).
import type { RateLimitOverrides } from "../../ipc/bindings";
import { formatCapMap, parseCapMap, type CapMapNoun, type ParsedCapMap } from "../../shared/capMap";
import { parseWholeNumber } from "../../shared/settingsForm";

export const MODEL_CAPS_PATH = "/rateLimitOverrides/modelConcurrency";
export const MAX_WAIT_PATH = "/rateLimitOverrides/maxWaitMs";
export const EXECUTION_PATH = "/rateLimitOverrides/executionMaxWaitMs";

export type OverridesForm = {
  /** `model=cap` per line (or separated by commas). */
  modelCaps: string;
  /** Raw text; empty uses `requestQueue.maxWaitMs`. */
  maxWaitMs: string;
  /** Raw text; empty uses `requestQueue.executionMaxWaitMs`. */
  executionMaxWaitMs: string;
};

export const EMPTY_OVERRIDES_FORM: OverridesForm = { modelCaps: "", maxWaitMs: "", executionMaxWaitMs: "" };

/** How the per-model caps' messages name an entry. */
const MODEL_CAPS: CapMapNoun = { noun: "model", example: "glm-5=2" };

export function overridesFormFrom(o: RateLimitOverrides | null | undefined): OverridesForm {
  return {
    modelCaps: formatCapMap(o?.modelConcurrency),
    maxWaitMs: o?.maxWaitMs == null ? "" : String(o.maxWaitMs),
    executionMaxWaitMs: o?.executionMaxWaitMs == null ? "" : String(o.executionMaxWaitMs),
  };
}

/** Parses `model=cap` entries, one per line or separated by commas; blank ones are skipped. */
export function parseModelCaps(text: string): ParsedCapMap {
  return parseCapMap(text, MODEL_CAPS);
}

function budget(raw: string, path: string, errors: Record<string, string>): number | null {
  const parsed = parseWholeNumber(raw, true);
  if ("error" in parsed) {
    errors[path] = parsed.error;
    return null;
  }
  return parsed.value;
}

/**
 * The overrides the form holds. `keep` supplies what the form does not edit (the
 * second connection cap, `rateLimitOverrides.maxConcurrent`), since a patch replaces
 * the whole object. Problems go into `errors` by path.
 */
export function buildOverrides(
  s: OverridesForm,
  keep: RateLimitOverrides | null | undefined,
  errors: Record<string, string>,
): RateLimitOverrides {
  const out: RateLimitOverrides = {};
  if (keep?.maxConcurrent != null) out.maxConcurrent = keep.maxConcurrent;
  const parsed = parseModelCaps(s.modelCaps);
  if (parsed.errors.length) errors[MODEL_CAPS_PATH] = parsed.errors.join(" ");
  if (Object.keys(parsed.caps).length) out.modelConcurrency = parsed.caps;
  const wait = budget(s.maxWaitMs, MAX_WAIT_PATH, errors);
  if (wait !== null) out.maxWaitMs = wait;
  const execution = budget(s.executionMaxWaitMs, EXECUTION_PATH, errors);
  if (execution !== null) out.executionMaxWaitMs = execution;
  return out;
}

function canonical(o: RateLimitOverrides | null | undefined): string {
  const caps = Object.entries(o?.modelConcurrency ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([o?.maxConcurrent ?? null, caps, o?.maxWaitMs ?? null, o?.executionMaxWaitMs ?? null]);
}

/** Whether two override objects mean the same (absent, null and empty are alike). */
export function sameOverrides(a: RateLimitOverrides | null | undefined, b: RateLimitOverrides | null | undefined): boolean {
  return canonical(a) === canonical(b);
}

// The validator's ranges table (resilience_ranges) as the forms use it.
import type { FieldRange } from "../ipc/bindings";
import { formatDuration, formatInt } from "./format";

export type RangeLookup = (path: string) => FieldRange | undefined;

/** Looks a field up by its JSON pointer; list items use the `*` row. */
export function rangeLookup(fields: FieldRange[] | undefined): RangeLookup {
  const byPath = new Map((fields ?? []).map((f) => [f.path, f]));
  return (path) => byPath.get(path) ?? byPath.get(path.replace(/\/\d+(?=\/|$)/g, "/*"));
}

/** "1,000–86,400,000 ms (1 s–1 d)", "1–1,000", "1–32 items", "one of a, b". */
export function formatRange(r: FieldRange | undefined): string {
  if (!r) return "Allowed range not published";
  if (r.kind === "choice") return `One of ${r.allowed.join(", ")}`;
  const min = r.min ?? 0;
  const max = r.max ?? 0;
  const core = `${formatInt(min)}–${formatInt(max)}`;
  if (r.kind === "list") return `${core} items`;
  if (r.kind === "text") return `${core} characters`;
  if (r.unit === "ms") return `${core} ms (${formatDuration(min)}–${formatDuration(max)})`;
  return r.unit ? `${core} ${r.unit}` : core;
}

/** Whether an integer lies outside a numeric range (unknown ranges never do). */
export function outOfRange(r: FieldRange | undefined, value: number): boolean {
  if (!r || r.kind !== "integer") return false;
  return (r.min !== null && value < r.min) || (r.max !== null && value > r.max);
}

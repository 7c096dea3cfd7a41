// The combo form's state (raw text per field) and the ComboView it becomes. Fields
// are addressed by the JSON pointer of the gateway's issues (`/targets/2/model`).
import type { ComboStrategy, ComboTarget, ComboView } from "../../ipc/bindings";
import { parseWholeNumber } from "../../shared/settingsForm";
import type { Same } from "../../shared/versionedEdits";

export const TARGETS_PATH = "/targets";
export const TARGET_FIELDS = ["model", "connection", "weight"] as const;
export type TargetField = (typeof TARGET_FIELDS)[number];

/** The gateway's bounds (ComboView: 1–64 targets; weight 0–1000, default 1). */
export const MAX_TARGETS = 64;
export const DEFAULT_WEIGHT = 1;

export type TargetDraft = {
  /** React key; stays with the target when rows around it move. */
  key: string;
  model: string;
  /** Pinned connection id; empty = any connection of the target. */
  connection: string;
  /** Raw text; empty = the default weight. */
  weight: string;
};

export type ComboForm = { name: string; strategy: ComboStrategy; targets: TargetDraft[] };

export const NEW_COMBO: ComboForm = { name: "", strategy: "priority", targets: [] };

export function targetPath(index: number, field: TargetField): string {
  return `${TARGETS_PATH}/${index}/${field}`;
}

/** Every field path of a form with `count` targets. */
export function comboPaths(count: number): string[] {
  const paths = ["/name", "/strategy", TARGETS_PATH];
  for (let i = 0; i < count; i++) for (const f of TARGET_FIELDS) paths.push(targetPath(i, f));
  return paths;
}

export function emptyTarget(key: string): TargetDraft {
  return { key, model: "", connection: "", weight: "" };
}

export function formFromCombo(c: ComboView): ComboForm {
  return {
    name: c.name,
    strategy: c.strategy,
    targets: c.targets.map((t, i) => ({
      key: `saved-${i}`,
      model: t.model,
      connection: t.connection ?? "",
      weight: t.weight == null ? "" : String(t.weight),
    })),
  };
}

function sameTargets(a: TargetDraft[], b: TargetDraft[]): boolean {
  return (
    a.length === b.length &&
    a.every((t, i) => t.model === b[i].model && t.connection === b[i].connection && t.weight === b[i].weight)
  );
}

/** Field equality for the versioned edits: the target list by content, the rest by value. */
export const sameComboField: Same = (a, b) =>
  Array.isArray(a) && Array.isArray(b) ? sameTargets(a as TargetDraft[], b as TargetDraft[]) : Object.is(a, b);

export type BuiltCombo = { combo: ComboView; errors: Record<string, string> };

/**
 * The combo the form holds. Weights are sent only for the weighted strategy (the
 * only one that reads them), pins only for targets that are not combos (`combos`:
 * the existing combo names); numbers are sent as typed, the gateway checks ranges.
 */
export function buildCombo(form: ComboForm, combos: ReadonlySet<string> = new Set()): BuiltCombo {
  const errors: Record<string, string> = {};
  const name = form.name.trim();
  if (name === "") errors["/name"] = "Enter the name clients will send as the model, e.g. coding.";
  if (form.targets.length === 0) errors[TARGETS_PATH] = "Add at least one target.";
  const weighted = form.strategy === "weighted";
  const targets: ComboTarget[] = form.targets.map((t, i) => {
    const model = t.model.trim();
    if (model === "") errors[targetPath(i, "model")] = "Enter a model, provider/model or combo name.";
    const pinned = t.connection !== "" && !combos.has(model);
    const target: ComboTarget = { model, connection: pinned ? t.connection : null };
    if (weighted) {
      const w = parseWholeNumber(t.weight, true);
      if ("error" in w) errors[targetPath(i, "weight")] = w.error;
      else if (w.value !== null) target.weight = w.value;
    }
    return target;
  });
  return { combo: { name, strategy: form.strategy, targets }, errors };
}

/** The list with the item at `from` moved to `to`. */
export function move<T>(list: T[], from: number, to: number): T[] {
  if (to < 0 || to >= list.length || from === to) return list;
  const next = [...list];
  const [item] = next.splice(from, 1);
  next.splice(to, 0, item);
  return next;
}

// Data-driven settings forms: fields addressed by JSON pointer, a draft of raw
// user input per field, and the patch a draft turns into. A patch always carries the
// whole top-level group(s) a form edits (the current values with the form's fields
// applied), so the server validates cross-field rules on the complete group. A map of
// caps (`capMap`) is one value: its patch replaces the whole map.
import { capMapKeys, capMapPaths, formatCapMap, parseCapMap, type CapMapNoun } from "./capMap";

export type SettingField =
  | { kind: "int"; path: string; label: string; help?: string; optional?: boolean }
  | { kind: "bool"; path: string; label: string; help?: string }
  | { kind: "intList"; path: string; label: string; help?: string }
  | { kind: "capMap"; path: string; label: string; help?: string; entries: CapMapNoun };

export type FieldSection = { title?: string; description?: string; fields: SettingField[] };

export type Draft = Record<string, string | boolean>;

type Json = unknown;

function tokens(path: string): string[] {
  return path
    .split("/")
    .slice(1)
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The value at a JSON pointer, or undefined. */
export function getAtPointer(doc: Json, path: string): Json {
  let cur: Json = doc;
  for (const t of tokens(path)) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, Json>)[t];
  }
  return cur;
}

/** Sets a value at a JSON pointer, creating objects on the way. */
export function setAtPointer(doc: Record<string, Json>, path: string, value: Json): void {
  const ts = tokens(path);
  let cur: Record<string, Json> = doc;
  ts.forEach((t, i) => {
    if (i === ts.length - 1) {
      cur[t] = value;
      return;
    }
    const next = cur[t];
    if (next === null || typeof next !== "object" || Array.isArray(next)) cur[t] = {};
    cur = cur[t] as Record<string, Json>;
  });
}

export function allFields(sections: FieldSection[]): SettingField[] {
  return sections.flatMap((s) => s.fields);
}

/** A stored map of caps, or null when the document holds none. */
function asCapMap(v: Json): Record<string, number> | null {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, number>) : null;
}

/** The draft showing a document's current values. */
export function draftFrom(doc: Json, fields: SettingField[]): Draft {
  const draft: Draft = {};
  for (const f of fields) {
    const v = getAtPointer(doc, f.path);
    if (f.kind === "bool") draft[f.path] = v === true;
    else if (f.kind === "intList") draft[f.path] = Array.isArray(v) ? v.join(", ") : "";
    else if (f.kind === "capMap") draft[f.path] = formatCapMap(asCapMap(v));
    else draft[f.path] = typeof v === "number" ? String(v) : "";
  }
  return draft;
}

/**
 * The paths a form's issues may name: each field's, and for a map of caps each entry
 * its draft names (`/providerConcurrency/glm`), so that entry's issue is shown by id.
 */
export function issuePaths(fields: SettingField[], draft: Draft): string[] {
  return fields.flatMap((f) =>
    f.kind === "capMap" ? capMapPaths(f.path, capMapKeys(String(draft[f.path] ?? ""), f.entries)) : [f.path],
  );
}

/** Parses "403, 404\n429" into numbers; null when a token is not a whole number. */
export function parseIntList(text: string): number[] | null {
  const parts = text.split(/[\s,;]+/).filter((p) => p !== "");
  if (!parts.every((p) => /^\d+$/.test(p))) return null;
  return parts.map(Number);
}

/**
 * The number typed into a whole-number field: sent as typed even when out of range
 * (the gateway is the validator of record); empty is null when the field is
 * optional; anything else is the error text shown on the field.
 */
export function parseWholeNumber(raw: string, optional: boolean): { value: number | null } | { error: string } {
  const text = raw.trim();
  if (text === "" && optional) return { value: null };
  if (/^-?\d+$/.test(text)) return { value: Number(text) };
  return { error: text === "" ? "Enter a whole number." : "Enter a whole number (no units or decimals)." };
}

export type BuiltPatch = {
  /** `{ group: {...whole group with the draft applied} }` per top-level group touched. */
  patch: Record<string, Json>;
  /** Client-side problems that block sending (path → message). */
  errors: Record<string, string>;
};

/**
 * Turns a draft into a patch over `doc`. Numbers are sent as typed — even when out of
 * range, since the gateway is the validator of record — but text that is not a whole
 * number cannot be sent and becomes a client-side error. Empty optional numbers are
 * sent as null ("not set").
 */
export function buildPatch(doc: Json, fields: SettingField[], draft: Draft): BuiltPatch {
  const patch: Record<string, Json> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const top = tokens(f.path)[0];
    if (!(top in patch)) {
      const current = getAtPointer(doc, `/${top}`);
      patch[top] = current !== null && typeof current === "object" ? structuredClone(current) : current;
    }
    const raw = draft[f.path];
    if (f.kind === "bool") {
      setAtPointer(patch, f.path, raw === true);
    } else if (f.kind === "intList") {
      const list = parseIntList(String(raw ?? ""));
      if (list === null) errors[f.path] = "Enter whole numbers separated by commas.";
      else setAtPointer(patch, f.path, list);
    } else if (f.kind === "capMap") {
      const parsed = parseCapMap(String(raw ?? ""), f.entries);
      if (parsed.errors.length) errors[f.path] = parsed.errors.join(" ");
      else setAtPointer(patch, f.path, parsed.caps);
    } else {
      const parsed = parseWholeNumber(String(raw ?? ""), f.optional === true);
      if ("error" in parsed) errors[f.path] = parsed.error;
      else setAtPointer(patch, f.path, parsed.value);
    }
  }
  return { patch, errors };
}

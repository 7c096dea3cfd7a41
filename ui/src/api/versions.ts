// Document versions (optimistic concurrency): every management document the gateway
// stores carries a `version`, incremented by each change. A write names the version
// it was made to (REST `If-Match: "N"`, IPC `expectedVersion`); a document changed
// since is refused with 412 `precondition_failed` instead of being overwritten.
import type { Versioned } from "../ipc/bindings";

export type { Versioned };

/**
 * The version a write was made to: a number, or null for "no precondition" (the
 * gateway then applies the write to whatever is stored, serialized with other writes).
 * The UI always sends a number.
 */
export type ExpectedVersion = number | null;

/** A document without its `version` (for bodies whose shape rejects unknown fields). */
export function withoutVersion<T extends object>(doc: T): Omit<T, "version"> {
  if (!("version" in doc)) return doc;
  const { version: _version, ...rest } = doc as T & { version: unknown };
  return rest;
}

/** The `If-Match` value of a version: the ETag the gateway sends (`"N"`). */
export function ifMatch(version: number): string {
  return `"${version}"`;
}

// A form's edits of a versioned document (optimistic concurrency). The edits are the
// fields the user changed, each with the value it had when they changed it; the form
// shows them on top of the live document, so a field the user did not touch always
// shows the current value.
//
// What a save names as the version it was made to (`expectedVersion`):
// - the live document's version while no field the user changed has been changed
//   elsewhere since (a change elsewhere to other fields is already on screen, and the
//   save carries only the user's changes on top of it, so nothing is overwritten);
// - otherwise the version the edits began at, which the gateway refuses with 412
//   `precondition_failed`: the page then says "changed elsewhere" and offers Reload,
//   which refetches the document and keeps the user's changes on top of it (`rebase`).
import { useCallback, useMemo, useRef, useState } from "react";

/** Field equality (values are the form's raw values: strings, booleans or row lists). */
export type Same = (a: unknown, b: unknown) => boolean;

export type FieldEdit = { from: unknown; to: unknown };

export type EditSession = {
  /** The live document's version when the first of these edits was made. */
  version: number;
  /** Per field: the value it had when the user changed it, and the user's value. */
  edits: Record<string, FieldEdit>;
};

/** The live values with the user's changes on top. */
export function applyEdits<T extends object>(live: T, session: EditSession | null): T {
  if (session === null) return live;
  const values: Record<string, unknown> = { ...(live as Record<string, unknown>) };
  for (const [k, e] of Object.entries(session.edits)) values[k] = e.to;
  return values as T;
}

/** Records a change; a field keeps the value it had when the user first changed it. */
export function addEdits(
  session: EditSession | null,
  live: object,
  version: number,
  change: object,
): EditSession {
  const base = session ?? { version, edits: {} };
  const edits = { ...base.edits };
  for (const [k, to] of Object.entries(change)) {
    const from = k in edits ? edits[k].from : (live as Record<string, unknown>)[k];
    edits[k] = { from, to };
  }
  return { version: base.version, edits };
}

/** Whether a change differs from the live document. */
export function isDirty(session: EditSession | null, live: object, same: Same): boolean {
  if (session === null) return false;
  const l = live as Record<string, unknown>;
  return Object.entries(session.edits).some(([k, e]) => !same(e.to, l[k]));
}

/**
 * Whether a field the user changed was changed elsewhere too (its live value is no
 * longer the one the user started from, nor the user's own).
 */
export function hasConflict(session: EditSession | null, live: object, same: Same): boolean {
  if (session === null) return false;
  const l = live as Record<string, unknown>;
  return Object.entries(session.edits).some(([k, e]) => !same(e.from, l[k]) && !same(e.to, l[k]));
}

/**
 * The edits moved onto a freshly loaded document: each change now starts from the
 * fresh value; a change the fresh document already holds is dropped. Null when none
 * remains.
 */
export function rebaseEdits(session: EditSession | null, fresh: object, version: number, same: Same): EditSession | null {
  if (session === null) return null;
  const f = fresh as Record<string, unknown>;
  const edits: Record<string, FieldEdit> = {};
  for (const [k, e] of Object.entries(session.edits)) {
    if (!same(e.to, f[k])) edits[k] = { from: f[k], to: e.to };
  }
  return Object.keys(edits).length > 0 ? { version, edits } : null;
}

export type VersionedEdits<T> = {
  /** The live document with the user's changes on top: what the form shows. */
  values: T;
  /** Whether a change differs from the live document ("Unsaved changes"). */
  dirty: boolean;
  /** Whether a field the user changed has been changed elsewhere since. */
  conflicted: boolean;
  /** The version a save names (see the top of this file). */
  expectedVersion: number;
  /** Records the user's change of one or more fields. */
  set: (change: Partial<T>) => void;
  /** Drops every change (the form shows the live document again). */
  discard: () => void;
  /** After a reload: keeps the changes on top of `fresh`; returns whether any remain. */
  rebase: (fresh: T, version: number) => boolean;
};

/** The edits of one form over `live` (at `version`). */
export function useVersionedEdits<T extends object>(live: T, version: number, same: Same = Object.is): VersionedEdits<T> {
  const [session, setSessionState] = useState<EditSession | null>(null);
  // The latest session, for `rebase`, which runs after an await.
  const current = useRef<EditSession | null>(null);
  const setSession = useCallback((next: EditSession | null) => {
    current.current = next;
    setSessionState(next);
  }, []);

  const values = useMemo(() => applyEdits(live, session), [live, session]);
  const conflicted = hasConflict(session, live, same);
  return {
    values,
    dirty: isDirty(session, live, same),
    conflicted,
    expectedVersion: conflicted && session !== null ? session.version : version,
    set: (change) => setSession(addEdits(current.current, live, version, change)),
    discard: () => setSession(null),
    rebase: (fresh, freshVersion) => {
      const next = rebaseEdits(current.current, fresh, freshVersion, same);
      setSession(next);
      return next !== null;
    },
  };
}

// What a versioned settings form does on Save, Reset to defaults, Reload and
// Discard, the state its footer shows, and its guard against leaving with unsaved
// edits. Both kinds of settings form (the field cards and the error-rules list)
// behave alike: one save or reload at a time; a save that went through clears the
// problems and the edits and says so; a refused one keeps the user's input and
// shows why; a reload (after a save refused as stale) keeps the user's changes on
// top of the current document; Discard drops them, and after a stale refusal also
// fetches the current document, which is known to be out of date.
import { useState } from "react";
import { reloadedText } from "./ChangedElsewhere";
import type { useFieldErrors } from "./useFieldErrors";
import { useUnsavedChangesGuard } from "./unsavedChanges";
import type { VersionedEdits } from "./versionedEdits";

export type SettingsSave = {
  /** A save (or reset) is under way. */
  busy: boolean;
  /** Clears the status (an edit makes it stale) or replaces it. */
  setStatus: (status: string | null) => void;
  /** Sends `patch` made to `expectedVersion`; `doneText` is the status once it went through. */
  save: (patch: Record<string, unknown>, expectedVersion: number, doneText: string) => Promise<void>;
  /** The footer's own props: busy, reloading, the status (what the last action
   *  did: "Saved.", "Defaults restored.", a reload's outcome), Reload, Discard. */
  footer: {
    busy: boolean;
    reloading: boolean;
    status: string | null;
    onReload: () => void;
    onDiscard: () => void;
  };
};

export function useSettingsSave<T extends object>({
  title,
  edits,
  errors,
  onSave,
  onReload,
  reloaded = reloadedText,
}: {
  /** The form's title: what leaving with unsaved edits asks about. */
  title: string;
  edits: Pick<VersionedEdits<T>, "dirty" | "discard" | "rebase">;
  errors: ReturnType<typeof useFieldErrors>;
  /** Sends a patch made to `expectedVersion`; rejects with ApiError. */
  onSave: (patch: Record<string, unknown>, expectedVersion: number) => Promise<unknown>;
  /** Refetches the document; resolves with it as the form's values, and its version. */
  onReload: () => Promise<{ values: T; version: number }>;
  /** The status after a reload, by whether the user's changes were kept. */
  reloaded?: (kept: boolean) => string;
}): SettingsSave {
  useUnsavedChangesGuard(edits.dirty, title);
  const [busy, setBusy] = useState(false);
  const [reloading, setReloading] = useState(false);
  const [status, setStatus] = useState<string | null>(null);

  const save = async (patch: Record<string, unknown>, expectedVersion: number, doneText: string) => {
    setBusy(true);
    setStatus(null);
    try {
      await onSave(patch, expectedVersion);
      errors.clear();
      edits.discard();
      setStatus(doneText);
    } catch (e) {
      errors.setError(e);
    } finally {
      setBusy(false);
    }
  };

  const reload = async () => {
    setReloading(true);
    setStatus(null);
    try {
      const fresh = await onReload();
      const kept = edits.rebase(fresh.values, fresh.version);
      errors.clear();
      setStatus(reloaded(kept));
    } catch (e) {
      errors.setError(e);
    } finally {
      setReloading(false);
    }
  };

  const discard = () => {
    const stale = errors.error?.isPreconditionFailed === true;
    edits.discard();
    errors.clear();
    setStatus(null);
    if (stale) void reload();
  };

  return {
    busy,
    setStatus,
    save,
    footer: { busy, reloading, status, onReload: () => void reload(), onDiscard: discard },
  };
}

// A card editing one settings group (or a few): fields with their allowed ranges,
// Save (sends the group's patch with the version it was made to), Reset to defaults,
// and server issues mapped onto the fields by JSON pointer. The user's input survives
// a rejected save; a save refused because the settings changed elsewhere (412) says
// so and offers Reload, which keeps the user's edits on top of the current settings.
import { useMemo, type FormEvent, type ReactNode } from "react";
import { ChangedElsewhere } from "./ChangedElsewhere";
import type { RangeLookup } from "./ranges";
import { FormErrors } from "./fields";
import { SettingInput } from "./SettingInput";
import { useSettingsSave } from "./settingsSave";
import { allFields, buildPatch, draftFrom, issuePaths, type Draft, type FieldSection } from "./settingsForm";
import { useFieldErrors } from "./useFieldErrors";
import { useVersionedEdits } from "./versionedEdits";

/** A settings document as a card edits it: root-shaped, and its version. */
export type VersionedDoc = { doc: unknown; version: number };

export function fieldId(prefix: string, path: string): string {
  return `${prefix}${path.replace(/[^A-Za-z0-9]+/g, "-")}`;
}

export function SettingsCard({
  id,
  title,
  description,
  sections,
  doc,
  version,
  defaults,
  ranges,
  basePath,
  onSave,
  onReload,
  children,
}: {
  id: string;
  title: string;
  description?: ReactNode;
  sections: FieldSection[];
  /** The current document, root-shaped (`{ group: {...} }`; no `version` inside a group). */
  doc: unknown;
  /** The document's version: a save names it (or the version its edits began at). */
  version: number;
  /** The defaults document, root-shaped; enables "Reset to defaults". */
  defaults?: unknown;
  ranges: RangeLookup;
  /** Issue paths may be relative to this pointer (e.g. `/modelLockout`). */
  basePath?: string;
  /** Sends a patch made to `expectedVersion`; rejects with ApiError. */
  onSave: (patch: Record<string, unknown>, expectedVersion: number) => Promise<unknown>;
  /** Refetches the document (after a save refused as stale) and resolves with it. */
  onReload: () => Promise<VersionedDoc>;
  children?: ReactNode;
}) {
  const fields = useMemo(() => allFields(sections), [sections]);
  const liveDraft = useMemo(() => draftFrom(doc, fields), [doc, fields]);
  const edits = useVersionedEdits<Draft>(liveDraft, version);
  const draft = edits.values;
  const paths = useMemo(() => issuePaths(fields, draft), [fields, draft]);
  const errors = useFieldErrors(paths, { basePath });
  const dirty = edits.dirty;
  const saving = useSettingsSave({
    title,
    edits,
    errors,
    onSave,
    onReload: async () => {
      const fresh = await onReload();
      return { values: draftFrom(fresh.doc, fields), version: fresh.version };
    },
  });

  const set = (path: string, value: string | boolean) => {
    saving.setStatus(null);
    edits.set({ [path]: value });
  };

  const send = (source: unknown, values: Draft, expectedVersion: number, doneText: string) => {
    const built = buildPatch(source, fields, values);
    if (Object.keys(built.errors).length > 0) {
      errors.setClientErrors(built.errors);
      saving.setStatus(null);
      return;
    }
    void saving.save(built.patch, expectedVersion, doneText);
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    send(doc, draft, edits.expectedVersion, "Saved.");
  };

  const resetToDefaults = () => {
    if (defaults === undefined) return;
    send(defaults, draftFrom(defaults, fields), version, "Defaults restored.");
  };

  const titleId = `${id}-title`;
  return (
    <section className="card" aria-labelledby={titleId}>
      <header className="card-header">
        <h2 id={titleId}>{title}</h2>
        {dirty && <span className="badge badge-info">Unsaved changes</span>}
      </header>
      {description ? <div className="card-description">{description}</div> : null}
      <form noValidate onSubmit={onSubmit}>
        {sections.map((section, i) => {
          const body = (
            <div className="field-grid">
              {section.fields.map((f) => (
                <SettingInput
                  key={f.path}
                  id={fieldId(id, f.path)}
                  field={f}
                  value={draft[f.path]}
                  fieldError={errors.fieldError}
                  ranges={ranges}
                  onChange={(v) => set(f.path, v)}
                />
              ))}
            </div>
          );
          return section.title ? (
            <fieldset key={section.title} className="fieldset">
              <legend>{section.title}</legend>
              {section.description ? <p className="field-help">{section.description}</p> : null}
              {body}
            </fieldset>
          ) : (
            <div key={`s${i}`}>{body}</div>
          );
        })}
        {children}
        <SettingsCardFooter
          title={title}
          errors={errors}
          dirty={dirty}
          {...saving.footer}
          onReset={defaults !== undefined ? resetToDefaults : undefined}
        />
      </form>
    </section>
  );
}

/**
 * The end of every settings form: form-level errors (or, for a save refused because
 * the document changed elsewhere, that message with Reload), Save, Reset to defaults
 * (when defaults exist), Discard changes (when edited) and the save status. Button
 * names carry the card title for screen readers ("Save Connection cooldown").
 */
export function SettingsCardFooter({
  title,
  errors,
  busy: saving,
  reloading = false,
  dirty,
  status,
  onReset,
  onReload,
  onDiscard,
  what = "The settings",
}: {
  title: string;
  errors: ReturnType<typeof useFieldErrors>;
  /** A save (or reset) is under way. */
  busy: boolean;
  /** A reload is under way (the buttons wait for it too). */
  reloading?: boolean;
  dirty: boolean;
  status: ReactNode;
  onReset?: () => void;
  /** Refetches the document after a save refused as stale (412). */
  onReload: () => void;
  onDiscard: () => void;
  /** The subject of the "changed elsewhere" text. */
  what?: string;
}) {
  const busy = saving || reloading;
  return (
    <>
      {errors.error?.isPreconditionFailed ? (
        <ChangedElsewhere what={what} title={title} busy={busy} onReload={onReload} />
      ) : (
        <FormErrors
          error={errors.error}
          issues={errors.formIssues}
          title={errors.error?.isValidation ? `${errors.error.message}` : undefined}
        />
      )}
      <div className="card-actions">
        <button type="submit" className="btn btn-primary" disabled={busy}>
          Save <span className="sr-only">{title}</span>
        </button>
        {onReset && (
          <button type="button" className="btn" disabled={busy} onClick={onReset}>
            Reset <span className="sr-only">{title}</span> to defaults
          </button>
        )}
        {dirty && (
          <button type="button" className="btn btn-ghost" disabled={busy} onClick={onDiscard}>
            Discard changes
          </button>
        )}
        <span className="card-status" role="status">
          {reloading ? "Reloading…" : saving ? "Saving…" : status}
        </span>
      </div>
    </>
  );
}

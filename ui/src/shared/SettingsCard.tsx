// A card editing one settings group (or a few): fields with their allowed ranges,
// Save (sends the group's patch), Reset to defaults, and server issues mapped onto
// the fields by JSON pointer. The user's input survives a rejected save.
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { formatRange, type RangeLookup } from "./ranges";
import { FormErrors, NumberField, Switch, TextField } from "./fields";
import { allFields, buildPatch, draftFrom, sameDraft, type Draft, type FieldSection } from "./settingsForm";
import { useFieldErrors } from "./useFieldErrors";

export function fieldId(prefix: string, path: string): string {
  return `${prefix}${path.replace(/[^A-Za-z0-9]+/g, "-")}`;
}

export function SettingsCard({
  id,
  title,
  description,
  sections,
  doc,
  defaults,
  ranges,
  basePath,
  onSave,
  children,
}: {
  id: string;
  title: string;
  description?: ReactNode;
  sections: FieldSection[];
  /** The current document, root-shaped (`{ group: {...} }`). */
  doc: unknown;
  /** The defaults document, root-shaped; enables "Reset to defaults". */
  defaults?: unknown;
  ranges: RangeLookup;
  /** Issue paths may be relative to this pointer (e.g. `/modelLockout`). */
  basePath?: string;
  /** Sends a patch; rejects with ApiError. */
  onSave: (patch: Record<string, unknown>) => Promise<unknown>;
  children?: ReactNode;
}) {
  const fields = useMemo(() => allFields(sections), [sections]);
  const paths = useMemo(() => fields.map((f) => f.path), [fields]);
  const baseDraft = useMemo(() => draftFrom(doc, fields), [doc, fields]);
  const [edits, setEdits] = useState<Draft | null>(null);
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const errors = useFieldErrors(paths, { basePath });
  const draft = edits ?? baseDraft;
  const dirty = edits !== null && !sameDraft(edits, baseDraft);

  const set = (path: string, value: string | boolean) => {
    setStatus(null);
    setEdits({ ...draft, [path]: value });
  };

  const send = async (source: unknown, values: Draft, doneText: string) => {
    const built = buildPatch(source, fields, values);
    if (Object.keys(built.errors).length > 0) {
      errors.setClientErrors(built.errors);
      setStatus(null);
      return;
    }
    setBusy(true);
    setStatus(null);
    try {
      await onSave(built.patch);
      errors.clear();
      setEdits(null);
      setStatus(doneText);
    } catch (e) {
      errors.setError(e);
    } finally {
      setBusy(false);
    }
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    void send(doc, draft, "Saved.");
  };

  const resetToDefaults = () => {
    if (defaults === undefined) return;
    void send(defaults, draftFrom(defaults, fields), "Defaults restored.");
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
              {section.fields.map((f) => {
                const fid = fieldId(id, f.path);
                const error = errors.fieldError(f.path);
                if (f.kind === "bool") {
                  return (
                    <Switch
                      key={f.path}
                      id={fid}
                      path={f.path}
                      label={f.label}
                      help={f.help}
                      checked={draft[f.path] === true}
                      error={error}
                      onChange={(v) => set(f.path, v)}
                    />
                  );
                }
                if (f.kind === "intList") {
                  const item = ranges(`${f.path}/*`);
                  return (
                    <TextField
                      key={f.path}
                      id={fid}
                      path={f.path}
                      label={f.label}
                      range={ranges(f.path)}
                      help={[f.help, item ? `Each ${formatRange(item)}.` : null].filter(Boolean).join(" ")}
                      value={String(draft[f.path] ?? "")}
                      error={error}
                      onChange={(v) => set(f.path, v)}
                    />
                  );
                }
                return (
                  <NumberField
                    key={f.path}
                    id={fid}
                    path={f.path}
                    label={f.label}
                    help={f.help}
                    optional={f.optional}
                    range={ranges(f.path)}
                    value={String(draft[f.path] ?? "")}
                    error={error}
                    onChange={(v) => set(f.path, v)}
                  />
                );
              })}
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
          busy={busy}
          dirty={dirty}
          status={status}
          onReset={defaults !== undefined ? resetToDefaults : undefined}
          onDiscard={() => {
            setEdits(null);
            errors.clear();
          }}
        />
      </form>
    </section>
  );
}

/**
 * The end of every settings form: form-level errors, Save, Reset to defaults (when
 * defaults exist), Discard changes (when edited) and the save status. Button names
 * carry the card title for screen readers ("Save Connection cooldown").
 */
export function SettingsCardFooter({
  title,
  errors,
  busy,
  dirty,
  status,
  onReset,
  onDiscard,
}: {
  title: string;
  errors: ReturnType<typeof useFieldErrors>;
  busy: boolean;
  dirty: boolean;
  status: ReactNode;
  onReset?: () => void;
  onDiscard: () => void;
}) {
  return (
    <>
      <FormErrors
        error={errors.error}
        issues={errors.formIssues}
        title={errors.error?.isValidation ? `${errors.error.message}` : undefined}
      />
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
          {busy ? "Saving…" : status}
        </span>
      </div>
    </>
  );
}

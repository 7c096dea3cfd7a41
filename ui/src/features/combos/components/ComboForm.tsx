// Create or edit a combo: its name (fixed once created: it is what clients send),
// strategy (with what it does) and targets. Server issues land on the field their
// JSON pointer names (`/targets/1/model`); the rest are listed at the top. An edit
// shows the user's changes on top of the live combo and names the version they were
// made to; a save refused because the combo changed elsewhere (412) says so and
// offers Reload, which keeps the user's changes on top of the current combo.
import { useMemo, useState, type FormEvent } from "react";
import { ApiError } from "../../../api/ApiError";
import type { ComboStrategy, ComboView, ConnectionView, Versioned } from "../../../ipc/bindings";
import { ChangedElsewhere, reloadedText } from "../../../shared/ChangedElsewhere";
import { FormErrors, SelectField, TextField } from "../../../shared/fields";
import { useFieldErrors } from "../../../shared/useFieldErrors";
import { useUnsavedChangesGuard } from "../../../shared/unsavedChanges";
import { useVersionedEdits } from "../../../shared/versionedEdits";
import { usePutCombo, useReloadCombos } from "../api";
import { buildCombo, comboPaths, formFromCombo, NEW_COMBO, sameComboField, type ComboForm as FormState } from "../form";
import { ORDER_ONLY, STRATEGIES, strategyInfo } from "../strategies";
import { TargetsEditor } from "./TargetsEditor";
import { EditorActions } from "../../../shared/EditorActions";

export function ComboForm({
  combo,
  combos,
  connections,
  onDone,
  onCancel,
}: {
  /** The combo being edited (live from the list); absent when creating one. */
  combo?: Versioned<ComboView>;
  /** Every combo (targets may name them). */
  combos: Versioned<ComboView>[];
  connections: ConnectionView[];
  onDone: (saved: Versioned<ComboView>, created: boolean) => void;
  onCancel: () => void;
}) {
  const editing = combo !== undefined;
  const live = useMemo(() => (combo ? formFromCombo(combo) : NEW_COMBO), [combo]);
  const edits = useVersionedEdits<FormState>(live, combo?.version ?? 0, sameComboField);
  const state = edits.values;
  const put = usePutCombo();
  const reloadCombos = useReloadCombos();
  const [reloading, setReloading] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const errors = useFieldErrors(comboPaths(state.targets.length));
  const busy = put.isPending || reloading;
  useUnsavedChangesGuard(edits.dirty, editing ? `your changes to combo ${combo.name}` : "the new combo");
  const comboNames = useMemo(() => new Set(combos.map((c) => c.name)), [combos]);

  const set = (change: Partial<FormState>) => {
    setStatus(null);
    edits.set(change);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setStatus(null);
    const built = buildCombo(state, comboNames);
    if (!editing && built.combo.name !== "" && comboNames.has(built.combo.name)) {
      built.errors["/name"] = `A combo named ${built.combo.name} already exists: edit it instead, or choose another name.`;
    }
    if (Object.keys(built.errors).length) return errors.setClientErrors(built.errors);
    try {
      const saved = await put.mutateAsync({ combo: built.combo, expectedVersion: editing ? edits.expectedVersion : 0 });
      errors.clear();
      onDone(saved, !editing);
    } catch (err) {
      if (!editing && err instanceof ApiError && err.isPreconditionFailed) {
        // Version 0 means "does not exist yet": someone created this name meanwhile.
        void reloadCombos().catch(() => {});
        return errors.setClientErrors({
          "/name": `A combo named ${built.combo.name} was just created elsewhere: choose another name, or cancel and edit that one.`,
        });
      }
      errors.setError(err);
    }
  };

  const reload = async () => {
    if (!combo) return;
    setReloading(true);
    setStatus(null);
    try {
      const fresh = (await reloadCombos()).find((c) => c.name === combo.name);
      if (!fresh) throw new ApiError("not_found", `Combo ${combo.name} was deleted elsewhere; cancel to see the list.`);
      const kept = edits.rebase(formFromCombo(fresh), fresh.version);
      errors.clear();
      setStatus(reloadedText(kept));
    } catch (err) {
      errors.setError(err);
    } finally {
      setReloading(false);
    }
  };
  const changedElsewhere = errors.error?.isPreconditionFailed === true;
  const title = editing ? `Edit combo ${combo.name}` : "New combo";

  return (
    <section className="card form-card" aria-labelledby="combo-form-title">
      <header className="card-header">
        <h2 id="combo-form-title">{title}</h2>
        {editing && edits.dirty && <span className="badge badge-info">Unsaved changes</span>}
      </header>
      <p className="card-description">{ORDER_ONLY}</p>
      <form noValidate onSubmit={submit}>
        {!changedElsewhere && <FormErrors error={errors.error} issues={errors.formIssues} />}
        <div className="field-grid">
          {editing ? (
            <div className="field">
              <span className="field-label">Name</span>
              <p className="field-static">
                <code>{combo.name}</code>
              </p>
            </div>
          ) : (
            <TextField
              id="combo-name"
              label="Name"
              path="/name"
              value={state.name}
              onChange={(v) => set({ name: v })}
              required
              help="What clients send as the model, e.g. coding: 1–128 of A–Z, a–z, 0–9, '_', '/', '.', ':' or '-'."
              error={errors.fieldError("/name")}
            />
          )}
          <SelectField<ComboStrategy>
            id="combo-strategy"
            label="Strategy"
            path="/strategy"
            value={state.strategy}
            options={STRATEGIES.map((s) => ({ value: s.value, label: s.label }))}
            onChange={(v) => set({ strategy: v })}
            help={strategyInfo(state.strategy).explanation}
            error={errors.fieldError("/strategy")}
          />
        </div>
        <TargetsEditor
          rows={state.targets}
          strategy={state.strategy}
          owner={editing ? combo.name : state.name.trim()}
          connections={connections}
          combos={combos}
          busy={busy}
          fieldError={errors.fieldError}
          onChange={(targets) => set({ targets })}
          onReindex={errors.clear}
        />
        {changedElsewhere && <ChangedElsewhere what="This combo" title={title} busy={busy} onReload={() => void reload()} />}
        <EditorActions busy={busy} reloading={reloading} status={status} onCancel={onCancel} />
      </form>
    </section>
  );
}

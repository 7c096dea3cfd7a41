// The operator error rules (`providerErrorRules`): a list of rules edited as a whole,
// saved as one patch carrying the complete list, reset to the defaults' list, with the
// gateway's issues shown on the row field they name (`/providerErrorRules/2/match` →
// rule 3's match text). The user's input survives a rejected save. The list is one
// value for optimistic concurrency: a save refused because the saved list changed
// elsewhere (412) offers Reload, which keeps the user's list over the current settings.
import { useEffect, useMemo, useRef, type FormEvent } from "react";
import type { ErrorReason, ProviderErrorRule, ResilienceSettings, RuleScope } from "../../../ipc/bindings";
import type { Versioned } from "../../../api/versions";
import { reloadedText } from "../../../shared/ChangedElsewhere";
import { NumberField, SelectField, TextField } from "../../../shared/fields";
import { humanize } from "../../../shared/format";
import { formatRange, type RangeLookup } from "../../../shared/ranges";
import { fieldId, SettingsCardFooter } from "../../../shared/SettingsCard";
import { useSettingsSave } from "../../../shared/settingsSave";
import { EmptyState } from "../../../shared/states";
import { useFieldErrors } from "../../../shared/useFieldErrors";
import { useVersionedEdits, type Same } from "../../../shared/versionedEdits";
import {
  RULES_PATH,
  SCOPES,
  buildRules,
  draftFromRule,
  emptyRule,
  rulePath,
  rulePaths,
  sameRules,
  type RuleDraft,
  type RuleField,
} from "../errorRules";
import { RemoveRowButton } from "../../../shared/RemoveRowButton";

const TITLE = "Provider error rules";

/** The form's one value: the whole list. */
type RulesForm = { rules: RuleDraft[] };

const sameList: Same = (a, b) => Array.isArray(a) && Array.isArray(b) && sameRules(a, b);

const rowsOf = (settings: ResilienceSettings): RuleDraft[] =>
  (settings.providerErrorRules ?? []).map((r, i) => draftFromRule(r, `saved-${i}`));

const SCOPE_LABELS: Record<string, string> = {
  model: "Model (lockout)",
  connection: "Connection (cooldown)",
  provider: "Provider (breaker)",
};

/** The choices of a `choice` row, the current value kept even when the table lacks it. */
function choices(allowed: string[] | undefined, fallback: readonly string[], current: string): string[] {
  const list = allowed && allowed.length > 0 ? [...allowed] : [...fallback];
  if (current !== "" && !list.includes(current)) list.push(current);
  return list;
}

export function ErrorRulesCard({
  settings,
  defaults,
  ranges,
  onSave,
  onReload,
}: {
  settings: Versioned<ResilienceSettings>;
  /** Enables "Reset to defaults" (the defaults' list). */
  defaults?: ResilienceSettings;
  ranges: RangeLookup;
  /** Sends `{ providerErrorRules: [...] }` made to `expectedVersion`; rejects with ApiError. */
  onSave: (patch: Record<string, unknown>, expectedVersion: number) => Promise<unknown>;
  /** Refetches the settings (after a save refused as stale) and resolves with them. */
  onReload: () => Promise<Versioned<ResilienceSettings>>;
}) {
  const id = "res-providerErrorRules";
  const live = useMemo<RulesForm>(() => ({ rules: rowsOf(settings) }), [settings]);
  const edits = useVersionedEdits(live, settings.version, sameList);
  const nextKey = useRef(0);
  const focusAfterRender = useRef<string | null>(null);
  const rows = edits.values.rules;
  const setEdits = (next: RuleDraft[]) => edits.set({ rules: next });
  const count = rows.length;
  const paths = useMemo(() => rulePaths(count), [count]);
  const errors = useFieldErrors(paths);
  const dirty = edits.dirty;
  const saving = useSettingsSave({
    title: TITLE,
    edits,
    errors,
    onSave,
    onReload: async () => {
      const fresh = await onReload();
      return { values: { rules: rowsOf(fresh) }, version: fresh.version };
    },
    reloaded: (kept) =>
      kept
        ? "Reloaded the current rules. Your edited list is kept in the form: review it and save again, or Discard changes to see the current list."
        : reloadedText(false),
  });
  const { busy, setStatus } = saving;

  useEffect(() => {
    if (focusAfterRender.current === null) return;
    document.getElementById(focusAfterRender.current)?.focus();
    focusAfterRender.current = null;
  });

  const listRange = ranges(RULES_PATH);
  const atMax = listRange?.max != null && count >= listRange.max;
  const scopeOptions = (current: RuleScope) =>
    choices(ranges(`${RULES_PATH}/*/scope`)?.allowed, SCOPES, current).map((v) => ({
      value: v as RuleScope,
      label: SCOPE_LABELS[v] ?? humanize(v),
    }));
  const reasonOptions = (current: ErrorReason | "") => [
    { value: "" as const, label: "Default (quota exhausted)" },
    ...choices(ranges(`${RULES_PATH}/*/reason`)?.allowed, [], current).map((v) => ({
      value: v as ErrorReason,
      label: humanize(v),
    })),
  ];

  const update = (index: number, change: Partial<RuleDraft>) => {
    setStatus(null);
    setEdits(rows.map((r, i) => (i === index ? { ...r, ...change } : r)));
  };

  const add = () => {
    setStatus(null);
    setEdits([...rows, emptyRule(`new-${nextKey.current++}`)]);
    focusAfterRender.current = fieldId(id, rulePath(count, "provider"));
  };

  const remove = (index: number) => {
    setStatus(null);
    setEdits(rows.filter((_, i) => i !== index));
    // The issues name rows by index; after a removal they would point at other rules.
    errors.clear();
    focusAfterRender.current =
      count > 1 ? fieldId(id, rulePath(Math.min(index, count - 2), "provider")) : `${id}-add`;
  };

  const send = (rules: ProviderErrorRule[], expectedVersion: number, doneText: string) =>
    void saving.save({ providerErrorRules: rules }, expectedVersion, doneText);

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const built = buildRules(rows);
    if (Object.keys(built.errors).length > 0) {
      errors.setClientErrors(built.errors);
      setStatus(null);
      return;
    }
    send(built.rules, edits.expectedVersion, "Saved.");
  };

  const resetToDefaults = () => {
    if (defaults === undefined) return;
    send(defaults.providerErrorRules ?? [], settings.version, "Defaults restored.");
  };

  const titleId = `${id}-title`;
  const rangeId = `${id}-range`;
  const listErrorId = `${id}-error`;
  const listError = errors.fieldError(RULES_PATH);
  const fid = (index: number, field: RuleField) => fieldId(id, rulePath(index, field));
  return (
    <section className="card card-wide" aria-labelledby={titleId}>
      <header className="card-header">
        <h2 id={titleId}>{TITLE}</h2>
        {dirty && <span className="badge badge-info">Unsaved changes</span>}
      </header>
      <div className="card-description">
        Your own rules, consulted before the built-in ones and tried in order (the first match wins). When the
        provider answers the status (any failure status if empty) with a body containing the match text
        (case-insensitive), the failure gets the reason (default: quota exhausted) and acts on the scope: a model
        lockout, the connection&apos;s cooldown, or the provider breaker. It then cools for the cooldown (empty: that
        layer&apos;s own backoff).
      </div>
      <form noValidate onSubmit={onSubmit}>
        <div className={`rule-list-head${listError ? " field-invalid" : ""}`} data-path={RULES_PATH}>
          <p id={rangeId} className="field-range">
            Number of rules: {formatRange(listRange)} · {count} in this list
          </p>
          {listError && (
            <p id={listErrorId} className="field-error">
              {listError}
            </p>
          )}
        </div>
        {count === 0 ? (
          <EmptyState title="No error rules">
            A rule teaches the gateway an error the built-in rules miss or misjudge: a provider that reports a used-up
            quota with an unusual status or wording, say. Matching failures then lock the model, cool the connection
            or open the provider breaker, for as long as you choose.
          </EmptyState>
        ) : (
          <ol className="rule-list">
            {rows.map((r, i) => {
              const n = i + 1;
              const of = <span className="sr-only">of rule {n}</span>;
              return (
                <li key={r.key}>
                  <fieldset className="fieldset">
                    <legend>Rule {n}</legend>
                    <div className="field-grid">
                      <TextField
                        id={fid(i, "provider")}
                        path={rulePath(i, "provider")}
                        label={<>Provider {of}</>}
                        value={r.provider}
                        range={ranges(rulePath(i, "provider"))}
                        help="Provider id, as in the connections list."
                        error={errors.fieldError(rulePath(i, "provider"))}
                        onChange={(v) => update(i, { provider: v })}
                      />
                      <NumberField
                        id={fid(i, "status")}
                        path={rulePath(i, "status")}
                        label={<>Status {of}</>}
                        value={r.status}
                        optional
                        placeholder="any failure"
                        range={ranges(rulePath(i, "status"))}
                        error={errors.fieldError(rulePath(i, "status"))}
                        onChange={(v) => update(i, { status: v })}
                      />
                      <TextField
                        id={fid(i, "match")}
                        path={rulePath(i, "match")}
                        label={<>Match text {of}</>}
                        value={r.match}
                        range={ranges(rulePath(i, "match"))}
                        help="Found anywhere in the error body, ignoring case."
                        error={errors.fieldError(rulePath(i, "match"))}
                        onChange={(v) => update(i, { match: v })}
                      />
                      <SelectField<RuleScope>
                        id={fid(i, "scope")}
                        path={rulePath(i, "scope")}
                        label={<>Scope {of}</>}
                        value={r.scope}
                        options={scopeOptions(r.scope)}
                        error={errors.fieldError(rulePath(i, "scope"))}
                        onChange={(v) => update(i, { scope: v })}
                      />
                      <SelectField<ErrorReason | "">
                        id={fid(i, "reason")}
                        path={rulePath(i, "reason")}
                        label={<>Reason {of}</>}
                        value={r.reason}
                        options={reasonOptions(r.reason)}
                        error={errors.fieldError(rulePath(i, "reason"))}
                        onChange={(v) => update(i, { reason: v })}
                      />
                      <NumberField
                        id={fid(i, "cooldownMs")}
                        path={rulePath(i, "cooldownMs")}
                        label={<>Cooldown {of} (ms)</>}
                        value={r.cooldownMs}
                        optional
                        placeholder="layer's backoff"
                        range={ranges(rulePath(i, "cooldownMs"))}
                        error={errors.fieldError(rulePath(i, "cooldownMs"))}
                        onChange={(v) => update(i, { cooldownMs: v })}
                      />
                    </div>
                    <div className="rule-actions">
                      <RemoveRowButton what="rule" n={n} disabled={busy} onClick={() => remove(i)} />
                    </div>
                  </fieldset>
                </li>
              );
            })}
          </ol>
        )}
        <button
          type="button"
          id={`${id}-add`}
          className="btn"
          disabled={busy || atMax}
          aria-describedby={listError ? `${rangeId} ${listErrorId}` : rangeId}
          onClick={add}
        >
          Add rule
        </button>
        <SettingsCardFooter
          title={TITLE}
          errors={errors}
          dirty={dirty}
          {...saving.footer}
          onReset={defaults !== undefined ? resetToDefaults : undefined}
        />
      </form>
    </section>
  );
}

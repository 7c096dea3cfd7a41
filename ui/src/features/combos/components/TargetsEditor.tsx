// The combo form's target list: add, remove and reorder targets; each picks its model
// from the routable names (other combos, `provider/model`, catalogue ids; any
// `provider/model` may also be typed), may be pinned to one connection of the
// target, and has a weight when the strategy is weighted. Under each model the form
// says what it runs on now.
import { useEffect, useRef } from "react";
import type { ComboStrategy, ComboView, ConnectionView, FieldRange } from "../../../ipc/bindings";
import { NumberField, SelectField, TextField } from "../../../shared/fields";
import { EmptyState } from "../../../shared/states";
import { DEFAULT_WEIGHT, emptyTarget, MAX_TARGETS, move, TARGETS_PATH, targetPath, type TargetDraft, type TargetField } from "../form";
import { connectionsOf, resolveModel, resolveTarget, routableNames } from "../routing";
import { RemoveRowButton } from "../../../shared/RemoveRowButton";

const LIST_ID = "combo-routable-names";
const WEIGHT_RANGE: FieldRange = { path: "/targets/*/weight", kind: "integer", min: 0, max: 1000, unit: null, allowed: [] };

export function fieldIdOf(index: number, field: TargetField): string {
  return `combo-target-${index}-${field}`;
}

/** What the model of a target resolves to, in words. */
function describe(row: TargetDraft, connections: ConnectionView[], combos: ComboView[], owner: string): string {
  const model = row.model.trim();
  if (model === "") return "A combo, provider/model or catalogue model id.";
  const r = resolveTarget({ model, connection: row.connection || null }, connections, combos, owner);
  if (r.kind === "none") {
    return "Matches no combo, provider with connections, catalogue model or known prefix (claude-…, gpt-…).";
  }
  const names = r.runs.map((x) => x.connection.name);
  if (r.kind === "combo") {
    return names.length
      ? `Combo: its targets take this place (runs on ${names.join(", ")}).`
      : "Combo: its targets take this place (none of them runs anywhere now).";
  }
  if (r.pinMismatch) return `The pinned connection is not a connection of ${r.providers.join(", ")}: this target never runs.`;
  return `Sends ${r.model} to ${names.join(", ")}.`;
}

export function TargetsEditor({
  rows,
  strategy,
  owner,
  connections,
  combos,
  busy,
  fieldError,
  onChange,
  onReindex,
}: {
  rows: TargetDraft[];
  strategy: ComboStrategy;
  /** The combo's name (empty while a new one has none). */
  owner: string;
  connections: ConnectionView[];
  combos: ComboView[];
  busy: boolean;
  fieldError: (path: string) => string | undefined;
  onChange: (rows: TargetDraft[]) => void;
  /** Rows moved or were removed: issues naming rows by index no longer apply. */
  onReindex: () => void;
}) {
  const nextKey = useRef(0);
  const focusAfterRender = useRef<string | null>(null);
  useEffect(() => {
    if (focusAfterRender.current === null) return;
    document.getElementById(focusAfterRender.current)?.focus();
    focusAfterRender.current = null;
  });

  const count = rows.length;
  const weighted = strategy === "weighted";
  const names = routableNames(connections, combos, owner);
  const listError = fieldError(TARGETS_PATH);

  const update = (index: number, change: Partial<TargetDraft>) =>
    onChange(rows.map((r, i) => (i === index ? { ...r, ...change } : r)));
  const add = () => {
    onChange([...rows, emptyTarget(`new-${nextKey.current++}`)]);
    focusAfterRender.current = fieldIdOf(count, "model");
  };
  const remove = (index: number) => {
    onChange(rows.filter((_, i) => i !== index));
    onReindex();
    focusAfterRender.current = count > 1 ? fieldIdOf(Math.min(index, count - 2), "model") : "combo-target-add";
  };
  const shift = (index: number, by: -1 | 1) => {
    onChange(move(rows, index, index + by));
    onReindex();
    const to = index + by;
    // Keep the focus on the button that moved the row, unless it is now disabled.
    const edge = by < 0 ? to === 0 : to === count - 1;
    focusAfterRender.current = `combo-target-${to}-${edge ? (by < 0 ? "down" : "up") : by < 0 ? "up" : "down"}`;
  };

  const pinOptions = (row: TargetDraft) => {
    const isCombo = combos.some((c) => c.name === row.model.trim());
    const resolved = isCombo ? null : resolveModel(row.model.trim(), connections);
    const list = resolved ? connectionsOf(resolved.providers, connections) : connections;
    const options = [
      { value: "", label: "Any connection" },
      ...list.map((c) => ({ value: c.id, label: `${c.name} (${c.provider})` })),
    ];
    if (row.connection !== "" && !options.some((o) => o.value === row.connection)) {
      options.push({ value: row.connection, label: `${row.connection} (not a connection of this target)` });
    }
    return { options, isCombo };
  };

  return (
    <div className="target-editor">
      <h3>Targets</h3>
      <div className={`rule-list-head${listError ? " field-invalid" : ""}`} data-path={TARGETS_PATH}>
        <p id="combo-targets-range" className="field-range">
          Tried in the strategy&apos;s order: 1–{MAX_TARGETS} targets · {count} in this list
        </p>
        {listError && (
          <p id="combo-targets-error" className="field-error">
            {listError}
          </p>
        )}
      </div>
      {count === 0 ? (
        <EmptyState title="No targets yet">
          Add the models this combo routes to: a provider/model pair such as anthropic/claude-sonnet-4-5, a model
          from a connection&apos;s catalogue, or another combo.
        </EmptyState>
      ) : (
        <ol className="rule-list">
          {rows.map((r, i) => {
            const n = i + 1;
            const of = <span className="sr-only">of target {n}</span>;
            const pin = pinOptions(r);
            return (
              <li key={r.key}>
                <fieldset className="fieldset">
                  <legend>Target {n}</legend>
                  <div className="field-grid">
                    <TextField
                      id={fieldIdOf(i, "model")}
                      path={targetPath(i, "model")}
                      label={<>Model {of}</>}
                      value={r.model}
                      list={LIST_ID}
                      help={describe(r, connections, combos, owner)}
                      error={fieldError(targetPath(i, "model"))}
                      onChange={(v) => update(i, { model: v })}
                    />
                    <SelectField
                      id={fieldIdOf(i, "connection")}
                      path={targetPath(i, "connection")}
                      label={<>Pinned connection {of}</>}
                      value={pin.isCombo ? "" : r.connection}
                      options={pin.options}
                      disabled={pin.isCombo}
                      help={pin.isCombo ? "Pin connections in that combo's own targets." : undefined}
                      error={fieldError(targetPath(i, "connection"))}
                      onChange={(v) => update(i, { connection: v })}
                    />
                    {weighted && (
                      <NumberField
                        id={fieldIdOf(i, "weight")}
                        path={targetPath(i, "weight")}
                        label={<>Weight {of}</>}
                        value={r.weight}
                        placeholder={String(DEFAULT_WEIGHT)}
                        range={WEIGHT_RANGE}
                        help={`Share of the draw; empty = ${DEFAULT_WEIGHT}.`}
                        error={fieldError(targetPath(i, "weight"))}
                        onChange={(v) => update(i, { weight: v })}
                      />
                    )}
                  </div>
                  <div className="rule-actions">
                    <button
                      type="button"
                      id={`combo-target-${i}-up`}
                      className="btn btn-small"
                      aria-label={`Move target ${n} up`}
                      disabled={busy || i === 0}
                      onClick={() => shift(i, -1)}
                    >
                      Move up
                    </button>
                    <button
                      type="button"
                      id={`combo-target-${i}-down`}
                      className="btn btn-small"
                      aria-label={`Move target ${n} down`}
                      disabled={busy || i === count - 1}
                      onClick={() => shift(i, 1)}
                    >
                      Move down
                    </button>
                    <RemoveRowButton what="target" n={n} disabled={busy} onClick={() => remove(i)} />
                  </div>
                </fieldset>
              </li>
            );
          })}
        </ol>
      )}
      <button
        type="button"
        id="combo-target-add"
        className="btn"
        disabled={busy || count >= MAX_TARGETS}
        aria-describedby={listError ? "combo-targets-range combo-targets-error" : "combo-targets-range"}
        onClick={add}
      >
        Add target
      </button>
      <datalist id={LIST_ID}>
        {names.map((n) => (
          <option key={n.value} value={n.value} label={n.label} />
        ))}
      </datalist>
    </div>
  );
}

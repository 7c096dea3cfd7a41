// Labelled form controls that show the validator's allowed range and a field error.
// Every control is a real <input>/<select> with a <label htmlFor>, and its range,
// help and error texts are linked through aria-describedby.
import type { ReactNode } from "react";
import type { FieldRange } from "../ipc/bindings";
import { formatDuration } from "./format";
import { issueField } from "./issueWords";
import { formatRange, outOfRange } from "./ranges";

function describedBy(...ids: (string | false | undefined)[]): string | undefined {
  const list = ids.filter(Boolean).join(" ");
  return list === "" ? undefined : list;
}

/** What a field shows under its control: its help, a hint, its problem. Their ids
 *  (`<id>-help`, `<id>-hint`, `<id>-error`) are the ones the control's
 *  aria-describedby names. */
function FieldNotes({ id, help, hint, error }: { id: string; help?: ReactNode; hint?: ReactNode; error?: string }) {
  return (
    <>
      {help !== undefined && (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
      {hint && (
        <p id={`${id}-hint`} className="field-hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      )}
    </>
  );
}

export function NumberField({
  id,
  label,
  path,
  value,
  onChange,
  range,
  error,
  help,
  optional = false,
  placeholder,
  disabled,
  showRange = true,
}: {
  id: string;
  /** The label; may add `sr-only` context (`Provider <span className="sr-only">of rule 1</span>`). */
  label: ReactNode;
  /** JSON pointer of the field (also exposed as data-path). */
  path: string;
  /** The raw text the user typed (kept as-is so a rejected value stays visible). */
  value: string;
  onChange: (value: string) => void;
  range?: FieldRange;
  error?: string;
  help?: ReactNode;
  /** Empty is allowed (means "unset"). */
  optional?: boolean;
  placeholder?: string;
  disabled?: boolean;
  showRange?: boolean;
}) {
  const trimmed = value.trim();
  const parsed = /^-?\d+$/.test(trimmed) ? Number(trimmed) : null;
  const hint =
    parsed !== null && outOfRange(range, parsed)
      ? `Outside the allowed range (${formatRange(range)}); the gateway will reject it.`
      : undefined;
  const human = parsed !== null && range?.unit === "ms" && parsed > 0 ? `= ${formatDuration(parsed)}` : undefined;
  const rangeId = `${id}-range`;
  const helpId = `${id}-help`;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  return (
    <div className={`field${error ? " field-invalid" : ""}`}>
      <label htmlFor={id}>{label}</label>
      <div className="field-input-row">
        <input
          id={id}
          type="number"
          inputMode="numeric"
          step={1}
          min={range?.min ?? undefined}
          max={range?.max ?? undefined}
          data-path={path}
          value={value}
          placeholder={placeholder ?? (optional ? "not set" : undefined)}
          disabled={disabled}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy(showRange && rangeId, help !== undefined && helpId, hint && hintId, error && errorId)}
          onChange={(e) => onChange(e.target.value)}
        />
        {human && <span className="field-human">{human}</span>}
      </div>
      {showRange && (
        <p id={rangeId} className="field-range">
          {formatRange(range)}
          {optional ? " · empty = not set" : ""}
        </p>
      )}
      <FieldNotes id={id} help={help} hint={hint} error={error} />
    </div>
  );
}

export function Switch({
  id,
  label,
  checked,
  onChange,
  help,
  error,
  path,
  disabled,
}: {
  id: string;
  /** The label; may add `sr-only` context (`Provider <span className="sr-only">of rule 1</span>`). */
  label: ReactNode;
  checked: boolean;
  onChange: (checked: boolean) => void;
  help?: ReactNode;
  error?: string;
  path?: string;
  disabled?: boolean;
}) {
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  return (
    <div className={`field field-switch${error ? " field-invalid" : ""}`}>
      <div className="switch-row">
        <input
          id={id}
          type="checkbox"
          role="switch"
          className="switch"
          checked={checked}
          disabled={disabled}
          data-path={path}
          aria-checked={checked}
          aria-invalid={error ? true : undefined}
          aria-describedby={describedBy(help !== undefined && helpId, error && errorId)}
          onChange={(e) => onChange(e.target.checked)}
        />
        <label htmlFor={id}>{label}</label>
      </div>
      <FieldNotes id={id} help={help} error={error} />
    </div>
  );
}

export function TextField({
  id,
  label,
  value,
  onChange,
  help,
  error,
  path,
  type = "text",
  multiline = false,
  placeholder,
  required,
  disabled,
  autoComplete = "off",
  list,
  range,
}: {
  id: string;
  /** The label; may add `sr-only` context (`Provider <span className="sr-only">of rule 1</span>`). */
  label: ReactNode;
  value: string;
  onChange: (value: string) => void;
  help?: ReactNode;
  error?: string;
  path?: string;
  type?: "text" | "password" | "url";
  multiline?: boolean;
  placeholder?: string;
  required?: boolean;
  disabled?: boolean;
  autoComplete?: string;
  list?: string;
  /** For list/text fields backed by the ranges table. */
  range?: FieldRange;
}) {
  const helpId = `${id}-help`;
  const rangeId = `${id}-range`;
  const errorId = `${id}-error`;
  const common = {
    id,
    value,
    placeholder,
    required,
    disabled,
    autoComplete,
    spellCheck: false,
    "data-path": path,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": describedBy(range && rangeId, help !== undefined && helpId, error && errorId),
  } as const;
  return (
    <div className={`field${error ? " field-invalid" : ""}`}>
      <label htmlFor={id}>
        {label}
        {required ? <span className="required" aria-hidden="true"> *</span> : null}
      </label>
      {multiline ? (
        <textarea {...common} rows={3} onChange={(e) => onChange(e.target.value)} />
      ) : (
        <input {...common} type={type} list={list} onChange={(e) => onChange(e.target.value)} />
      )}
      {range && (
        <p id={rangeId} className="field-range">
          {formatRange(range)}
        </p>
      )}
      <FieldNotes id={id} help={help} error={error} />
    </div>
  );
}

export function SelectField<V extends string>({
  id,
  label,
  value,
  options,
  onChange,
  help,
  error,
  path,
  disabled,
}: {
  id: string;
  /** The label; may add `sr-only` context (`Provider <span className="sr-only">of rule 1</span>`). */
  label: ReactNode;
  value: V;
  options: { value: V; label: string }[];
  onChange: (value: V) => void;
  help?: ReactNode;
  error?: string;
  path?: string;
  disabled?: boolean;
}) {
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  return (
    <div className={`field${error ? " field-invalid" : ""}`}>
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        value={value}
        disabled={disabled}
        data-path={path}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy(help !== undefined && helpId, error && errorId)}
        onChange={(e) => onChange(e.target.value as V)}
      >
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <FieldNotes id={id} help={help} error={error} />
    </div>
  );
}

/**
 * What a refused change says at the top of its form: a validation error in words
 * (how many values need a fix; each is marked at its field), any other error by its
 * message.
 */
export function errorTitle(error: { message: string; code?: string; issues?: unknown[] } | null): string {
  if (error?.code === "validation_failed") {
    const n = error.issues?.length ?? 0;
    if (n === 0) return "The gateway did not accept this change.";
    return n === 1
      ? "One value needs a fix before this can be saved."
      : `${n} values need a fix before this can be saved.`;
  }
  return error?.message ?? "The gateway rejected the change.";
}

/**
 * The form-level error box: the error in words and the issues no field claims, each
 * by its field's label (`labels`: JSON pointer → label) rather than its pointer.
 */
export function FormErrors({
  error,
  issues,
  title,
  labels,
}: {
  error: { message: string; code?: string; issues?: unknown[] } | null;
  issues: { path: string; message: string }[];
  title?: string;
  labels?: Record<string, string>;
}) {
  if (!error && issues.length === 0) return null;
  return (
    <div className="form-errors" role="alert">
      <p className="form-errors-title">{title ?? errorTitle(error)}</p>
      {issues.length > 0 && (
        <ul>
          {issues.map((i) => {
            const field = issueField(i.path, labels);
            return (
              <li key={`${i.path}:${i.message}`}>
                {field ? <strong>{field}</strong> : null}
                {field ? ": " : null}
                {i.message}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

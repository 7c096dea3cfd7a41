// One field of a settings card, by kind: a switch, a whole number, a list of numbers
// or a map of caps, each showing the validator's range for its path.
import { CapMapField } from "./CapMapField";
import { capMapKeys } from "./capMap";
import { NumberField, Switch, TextField } from "./fields";
import { formatRange, type RangeLookup } from "./ranges";
import type { SettingField } from "./settingsForm";

export function SettingInput({
  id,
  field: f,
  value,
  fieldError,
  ranges,
  onChange,
}: {
  id: string;
  field: SettingField;
  /** The draft's raw value of the field. */
  value: string | boolean | undefined;
  fieldError: (path: string) => string | undefined;
  ranges: RangeLookup;
  onChange: (value: string | boolean) => void;
}) {
  // The help text with a sentence on the ranges of a list's items, when published.
  const help = (...parts: (string | null | undefined)[]) => parts.filter(Boolean).join(" ") || undefined;
  const rangeText = (path: string) => {
    const r = ranges(path);
    return r ? formatRange(r) : null;
  };
  switch (f.kind) {
    case "bool":
      return (
        <Switch
          id={id}
          path={f.path}
          label={f.label}
          help={f.help}
          checked={value === true}
          error={fieldError(f.path)}
          onChange={onChange}
        />
      );
    case "intList": {
      const item = rangeText(`${f.path}/*`);
      return (
        <TextField
          id={id}
          path={f.path}
          label={f.label}
          range={ranges(f.path)}
          help={help(f.help, item && `Each ${item}.`)}
          value={String(value ?? "")}
          error={fieldError(f.path)}
          onChange={onChange}
        />
      );
    }
    case "capMap": {
      const key = rangeText(`${f.path}/*`);
      const cap = rangeText(`${f.path}/*/cap`);
      const { noun, example } = f.entries;
      return (
        <CapMapField
          id={id}
          path={f.path}
          label={f.label}
          range={ranges(f.path)}
          help={help(f.help, key && cap ? `Each ${noun}: id ${key}, cap ${cap}.` : null)}
          placeholder={example}
          value={String(value ?? "")}
          keys={capMapKeys(String(value ?? ""), f.entries)}
          fieldError={fieldError}
          onChange={onChange}
        />
      );
    }
    case "int":
      return (
        <NumberField
          id={id}
          path={f.path}
          label={f.label}
          help={f.help}
          optional={f.optional}
          range={ranges(f.path)}
          value={String(value ?? "")}
          error={fieldError(f.path)}
          onChange={onChange}
        />
      );
  }
}

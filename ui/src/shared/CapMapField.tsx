// A text area editing a map of caps (`id=cap` per line; see capMap.ts), with the
// issues of the map and of each entry it names shown under it.
import type { ReactNode } from "react";
import type { FieldRange } from "../ipc/bindings";
import { capMapError } from "./capMap";
import { TextField } from "./fields";

export function CapMapField({
  id,
  label,
  path,
  value,
  onChange,
  keys,
  fieldError,
  help,
  placeholder,
  range,
}: {
  id: string;
  label: ReactNode;
  /** JSON pointer of the map (`/providerConcurrency`). */
  path: string;
  /** The raw text, one `id=cap` per line. */
  value: string;
  onChange: (value: string) => void;
  /** The ids the text names: their issues are shown here too. */
  keys: readonly string[];
  fieldError: (path: string) => string | undefined;
  help?: ReactNode;
  placeholder?: string;
  /** The map's own range (number of entries), when the ranges table has one. */
  range?: FieldRange;
}) {
  return (
    <TextField
      id={id}
      label={label}
      path={path}
      multiline
      value={value}
      onChange={onChange}
      placeholder={placeholder}
      range={range}
      help={help}
      error={capMapError(fieldError, path, keys)}
    />
  );
}

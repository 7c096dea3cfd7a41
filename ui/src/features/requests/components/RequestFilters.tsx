// The request log's filters: status (all, succeeded, failed, one code), connection,
// model, client key and time range. Every change refetches the list from the newest.
import type { ApiKeyView, ConnectionView } from "../../../ipc/bindings";
import { SelectField, TextField } from "../../../shared/fields";
import { validCode, type RequestFilters, type StatusFilter, type TimeRange } from "../api";

export function RequestFiltersBar({
  filters,
  onChange,
  connections,
  keys,
  models,
}: {
  filters: RequestFilters;
  onChange: (change: Partial<RequestFilters>) => void;
  connections: ConnectionView[];
  keys: ApiKeyView[];
  /** Model names to suggest (those in the list and the connections' catalogues). */
  models: string[];
}) {
  const badCode = filters.status === "code" && filters.code.trim() !== "" && !validCode(filters.code);
  return (
    <div className="filters" role="search" aria-label="Filter requests">
      <SelectField<StatusFilter>
        id="req-status"
        label="Status"
        value={filters.status}
        onChange={(status) => onChange({ status })}
        options={[
          { value: "", label: "All" },
          { value: "ok", label: "Succeeded (2xx)" },
          { value: "error", label: "Errors (not 2xx)" },
          { value: "code", label: "One status code…" },
        ]}
      />
      {filters.status === "code" && (
        <TextField
          id="req-code"
          label="Status code"
          value={filters.code}
          onChange={(code) => onChange({ code })}
          placeholder="e.g. 429"
          error={badCode ? "Enter a status code from 100 to 599." : undefined}
        />
      )}
      <SelectField
        id="req-connection"
        label="Connection"
        value={filters.connection}
        onChange={(connection) => onChange({ connection })}
        options={[{ value: "", label: "Any" }, ...connections.map((c) => ({ value: c.id, label: c.name }))]}
      />
      <TextField
        id="req-model"
        label="Model"
        value={filters.model}
        onChange={(model) => onChange({ model })}
        placeholder="any"
        list="req-model-list"
      />
      <datalist id="req-model-list">
        {models.map((m) => (
          <option key={m} value={m} />
        ))}
      </datalist>
      <SelectField
        id="req-key"
        label="Client key"
        value={filters.key}
        onChange={(key) => onChange({ key })}
        options={[{ value: "", label: "Any" }, ...keys.map((k) => ({ value: k.id, label: k.name }))]}
      />
      <SelectField<TimeRange>
        id="req-range"
        label="Time"
        value={filters.range}
        onChange={(range) => onChange({ range })}
        options={[
          { value: "15m", label: "Last 15 minutes" },
          { value: "1h", label: "Last hour" },
          { value: "1d", label: "Last 24 hours" },
          { value: "all", label: "All kept" },
        ]}
      />
    </div>
  );
}

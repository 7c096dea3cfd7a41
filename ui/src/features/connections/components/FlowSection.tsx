// The connection form's flow control: the connection's concurrency cap, per-model
// caps (`model=cap` lines) and its own queue budgets, all acting on the request path
// (SPEC 4.6). Issues of one model's cap (`/rateLimitOverrides/modelConcurrency/glm-5`)
// are shown under the caps field, named by their model.
import type { FieldRange, RateLimitOverrides, ResilienceSettings } from "../../../ipc/bindings";
import { CapMapField } from "../../../shared/CapMapField";
import { NumberField, Switch } from "../../../shared/fields";
import { formatDuration, formatInt } from "../../../shared/format";
import type { RangeLookup } from "../../../shared/ranges";
import type { ConnectionFormState } from "../form";
import { EXECUTION_PATH, MAX_WAIT_PATH, MODEL_CAPS_PATH } from "../overrides";

const CAP_RANGE: FieldRange = { path: "/maxConcurrent", kind: "integer", min: 1, max: 10000, unit: null, allowed: [] };
const BUDGET_RANGE: FieldRange = { path: "", kind: "integer", min: 1, max: 86_400_000, unit: "ms", allowed: [] };

/** The budget's range: the settings row it overrides (same bounds), at the override's path. */
function budgetRange(ranges: RangeLookup, settingPath: string, path: string): FieldRange {
  return { ...(ranges(settingPath) ?? BUDGET_RANGE), path };
}

function fromSettings(ms: number | undefined, setting: string): string {
  return ms === undefined ? `empty = ${setting}` : `empty = ${setting} (${formatDuration(ms)})`;
}

function placeholder(ms: number | undefined): string {
  return ms === undefined ? "Request queue setting" : `${formatDuration(ms)} (Request queue setting)`;
}

export function FlowSection({
  state,
  onChange,
  fieldError,
  capModels,
  settings,
  ranges,
  kept,
}: {
  state: Pick<
    ConnectionFormState,
    "maxConcurrent" | "modelCaps" | "maxWaitMs" | "executionMaxWaitMs" | "protectionForced" | "authKind"
  >;
  onChange: (change: Partial<ConnectionFormState>) => void;
  fieldError: (path: string) => string | undefined;
  /** The models the caps text names (their issues are shown under it). */
  capModels: string[];
  /** The settings in force, for what an empty budget means. */
  settings?: ResilienceSettings;
  ranges: RangeLookup;
  /** The stored overrides (the second cap, which this form keeps as it is). */
  kept?: RateLimitOverrides;
}) {
  const queue = settings?.requestQueue;
  return (
    <section className="subsection" aria-label="Flow control">
      <h3>Flow control</h3>
      <p className="field-help">
        Requests over a cap wait in this connection&apos;s queue, first come first served across client keys, while
        quota-share serialization is on (Resilience); when it is off they are refused at once with a 429. Other
        connections with a free slot are tried before anything waits.
      </p>
      <div className="field-grid">
        <NumberField
          id="conn-max-concurrent"
          label="Max concurrent requests"
          path="/maxConcurrent"
          value={state.maxConcurrent}
          onChange={(v) => onChange({ maxConcurrent: v })}
          optional
          range={CAP_RANGE}
          placeholder="no cap"
          help="Requests in flight on this connection at once."
          error={fieldError("/maxConcurrent")}
        />
        <CapMapField
          id="conn-model-caps"
          label="Per-model caps"
          path={MODEL_CAPS_PATH}
          value={state.modelCaps}
          onChange={(v) => onChange({ modelCaps: v })}
          keys={capModels}
          fieldError={fieldError}
          placeholder="glm-5=1"
          help="One model=cap per line (cap 1–10,000), e.g. glm-5=1. The model is the id sent upstream (glm-5, not glm/glm-5)."
        />
        <NumberField
          id="conn-max-wait"
          label="Queue wait budget (ms)"
          path={MAX_WAIT_PATH}
          value={state.maxWaitMs}
          onChange={(v) => onChange({ maxWaitMs: v })}
          optional
          range={budgetRange(ranges, "/requestQueue/maxWaitMs", MAX_WAIT_PATH)}
          placeholder={placeholder(queue?.maxWaitMs)}
          help={`Longest wait for a slot here; a request over it fails without reaching the upstream. ${fromSettings(queue?.maxWaitMs, "Request queue → Max wait")}.`}
          error={fieldError(MAX_WAIT_PATH)}
        />
        <NumberField
          id="conn-execution-max-wait"
          label="Execution bound (ms)"
          path={EXECUTION_PATH}
          value={state.executionMaxWaitMs}
          onChange={(v) => onChange({ executionMaxWaitMs: v })}
          optional
          range={budgetRange(ranges, "/requestQueue/executionMaxWaitMs", EXECUTION_PATH)}
          placeholder={placeholder(queue?.executionMaxWaitMs)}
          help={`Longest wait for the answer after dispatch (a 504 after it; a started stream is watched by stream recovery instead). ${fromSettings(queue?.executionMaxWaitMs, "Request queue → Execution max wait")}.`}
          error={fieldError(EXECUTION_PATH)}
        />
      </div>
      <Switch
        id="conn-protection"
        label="Always protect from rate limits"
        path="/rateLimitProtection"
        checked={state.protectionForced}
        onChange={(v) => onChange({ protectionForced: v })}
        help={
          <>
            A protected connection that answers 429 with a retry time in its error body (for example Gemini&apos;s
            retryDelay) pauses its queue until then — requests wait here instead of the connection being cooled — and a
            retry time longer than the queue wait budget locks just that model on this connection.{" "}
            {state.authKind === "api_key"
              ? `API-key connections are protected anyway while Resilience → Request queue → Auto-enable for API-key connections is on${
                  queue === undefined ? "" : queue.autoEnableApiKeyProviders ? " (it is on)" : " (it is off)"
                }.`
              : "Off: this connection follows its cooldowns."}
          </>
        }
        error={fieldError("/rateLimitProtection")}
      />
      {kept?.maxConcurrent != null && (
        <p className="field-help">
          A second cap of {formatInt(kept.maxConcurrent)} set through the API or the config file
          (rateLimitOverrides.maxConcurrent) also applies; the stricter one wins. It is kept as it is.
        </p>
      )}
    </section>
  );
}

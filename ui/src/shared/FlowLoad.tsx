// A connection's live flow state (`rate_limits_get`): requests in flight against its
// concurrency cap, requests waiting in its queue, and its per-model gates. Shown the
// same way on the Connections and Combos pages.
import type { ConnectionFlowView, GateView } from "../ipc/bindings";
import { formatInt } from "./format";

function atCap(inFlight: number, gate: GateView | null | undefined): boolean {
  return gate != null && inFlight >= gate.cap;
}

function load(inFlight: number, gate: GateView | null | undefined): string {
  return `${formatInt(inFlight)} in flight ${gate ? `(cap ${formatInt(gate.cap)})` : "(no cap)"}`;
}

export function FlowLoad({
  flow,
  model,
}: {
  /** Undefined while unknown (loading, or the connection is new). */
  flow: ConnectionFlowView | undefined;
  /** Show only this upstream model's gate (a combo target); all gates when absent. */
  model?: string;
}) {
  if (flow === undefined) return <span className="muted">—</span>;
  const gates = model === undefined ? flow.models : flow.models.filter((m) => m.model === model);
  const queued = flow.gate !== null || flow.models.length > 0 || flow.queued > 0;
  return (
    <div className="flow-load">
      <span>
        {load(flow.inFlight, flow.gate)}
        {atCap(flow.inFlight, flow.gate) && (
          <>
            {" "}
            <span className="badge badge-warning">At cap</span>
          </>
        )}
      </span>
      {queued && <span className={flow.queued > 0 ? "flow-queued" : "muted"}>{formatInt(flow.queued)} queued</span>}
      {gates.length > 0 && (
        <ul className="plain-list small">
          {gates.map((m) => (
            <li key={m.model}>
              <code>{m.model}</code>: {load(m.gate.inFlight, m.gate)}, {formatInt(m.gate.queued)} queued
              {atCap(m.gate.inFlight, m.gate) && (
                <>
                  {" "}
                  <span className="badge badge-warning">At cap</span>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

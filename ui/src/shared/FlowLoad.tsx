// A connection's live flow state (`rate_limits_get`): requests in flight against its
// concurrency cap, requests waiting in its queue, and its per-model gates. Shown the
// same way on the Connections and Combos pages; the shared gates use its "At cap".
import type { ConnectionFlowView, GateView } from "../ipc/bindings";
import { formatInt } from "./format";

/** The "At cap" badge, after the load text, when the requests in flight fill the gate. */
export function AtCap({ inFlight, gate }: { inFlight: number; gate: GateView | null | undefined }) {
  if (gate == null || inFlight < gate.cap) return null;
  return (
    <>
      {" "}
      <span className="badge badge-warning">At cap</span>
    </>
  );
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
        <AtCap inFlight={flow.inFlight} gate={flow.gate} />
      </span>
      {queued && <span className={flow.queued > 0 ? "flow-queued" : "muted"}>{formatInt(flow.queued)} queued</span>}
      {gates.length > 0 && (
        <ul className="plain-list small">
          {gates.map((m) => (
            <li key={m.model}>
              <code>{m.model}</code>: {load(m.gate.inFlight, m.gate)}, {formatInt(m.gate.queued)} queued
              <AtCap inFlight={m.gate.inFlight} gate={m.gate} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

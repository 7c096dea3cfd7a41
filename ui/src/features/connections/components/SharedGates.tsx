// The concurrency gates every connection sits behind (SPEC 4.6), live from
// `rate_limits_get`: the gateway-wide cap (`requestQueue.globalConcurrentRequests`)
// and each provider's (`providerConcurrency`). Only the caps that are set exist, so
// nothing is shown while none is; the caps themselves are edited on Resilience.
import type { ReactNode } from "react";
import type { GateView, RateLimitsView } from "../../../ipc/bindings";
import { AtCap } from "../../../shared/FlowLoad";
import { formatInt } from "../../../shared/format";

function GateLine({ label, gate }: { label: ReactNode; gate: GateView }) {
  return (
    <li>
      {label}: {formatInt(gate.inFlight)} of {formatInt(gate.cap)} in flight,{" "}
      <span className={gate.queued > 0 ? "flow-queued" : undefined}>{formatInt(gate.queued)} queued</span>
      <AtCap inFlight={gate.inFlight} gate={gate} />
    </li>
  );
}

export function SharedGates({ view }: { view: RateLimitsView | undefined }) {
  if (view === undefined || (view.global === null && view.providers.length === 0)) return null;
  return (
    <section className="card shared-gates" aria-label="Shared concurrency caps">
      <ul className="plain-list">
        {view.global !== null && <GateLine label="Gateway" gate={view.global} />}
        {view.providers.map((p) => (
          <GateLine
            key={p.provider}
            label={
              <>
                Provider <code>{p.provider}</code>
              </>
            }
            gate={p.gate}
          />
        ))}
      </ul>
    </section>
  );
}

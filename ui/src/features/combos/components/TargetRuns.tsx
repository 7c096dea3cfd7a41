// The live state of one combo target: every connection it can run on, with its
// derived status (the badge every page shows, with its countdown), a lockout of this
// model, and its load (in flight / cap / queued, and this model's gate).
import type { ConnectionCooldownView, ConnectionFlowView } from "../../../ipc/bindings";
import { Countdown } from "../../../shared/Countdown";
import { FlowLoad } from "../../../shared/FlowLoad";
import { StatusBadge } from "../../../shared/StatusBadge";
import type { TargetResolution } from "../routing";

export type LiveMaps = {
  /** Cooldown rows by connection id; undefined while unknown. */
  cooldowns: Map<string, ConnectionCooldownView> | undefined;
  /** Flow state by connection id; undefined while unknown. */
  flows: Map<string, ConnectionFlowView> | undefined;
};

function nowhere(r: TargetResolution): string {
  if (r.kind === "none") return "Runs nowhere now: no connection serves this name.";
  if (r.kind === "combo") return "Runs nowhere now: none of that combo's targets has a connection.";
  if (r.pinMismatch) return `Runs nowhere: the pinned connection is not a connection of ${r.providers.join(", ")}.`;
  return `Runs nowhere now: ${r.providers.join(", ")} has no connections.`;
}

export function TargetRuns({
  resolution,
  live,
  showFormat = false,
}: {
  resolution: TargetResolution;
  live: LiveMaps;
  /** Name each connection's API format (when a combo mixes them). */
  showFormat?: boolean;
}) {
  const runs = resolution.kind === "none" ? [] : resolution.runs;
  if (runs.length === 0) return <span className="field-hint">{nowhere(resolution)}</span>;
  return (
    <ul className="plain-list run-list">
      {runs.map(({ connection: c, model }) => {
        const cd = live.cooldowns?.get(c.id);
        const lock = cd?.lockouts.find((l) => l.model === model);
        return (
          <li key={`${c.id}\n${model}`}>
            <div className="run-head">
              <strong>{c.name}</strong> <code className="muted small">{model}</code>{" "}
              {showFormat && <span className="muted small">{c.apiFormat} format </span>}
              <StatusBadge status={c.status} />
              {lock && (
                <span className="small">
                  {" "}
                  <span className="badge badge-warning">Model locked</span>
                  for <Countdown expiresAt={lock.expiresAt} expiredLabel="ending" />
                </span>
              )}
            </div>
            <FlowLoad flow={live.flows?.get(c.id)} model={model} />
          </li>
        );
      })}
    </ul>
  );
}

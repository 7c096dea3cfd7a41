// The Overview's connections line: how many route now and how many are out of
// rotation (switched-off ones are counted apart, as the gateway and the tray do),
// from the gateway's one derived status per connection (the health document), and
// every connection that is not plainly in rotation with its status badge and the
// sentence why.
import type { ConnectionRoutabilityView, HealthView } from "../../../ipc/bindings";
import { ConnectionName } from "../../../shared/ConnectionName";
import { formatCount, formatInt } from "../../../shared/format";
import { ErrorState, Loading } from "../../../shared/states";
import { needsAttention, StatusBadge } from "../../../shared/StatusBadge";
import { useHealthQuery } from "../api";

const isOff = (c: ConnectionRoutabilityView) => c.status.state === "disabled";
const isOut = (c: ConnectionRoutabilityView) => !c.status.routable && !isOff(c);

/**
 * Out of rotation first, then routable ones with a warning (failed Test, locked
 * models …), then switched-off ones, each in routing order.
 */
function attentionList(connections: ConnectionRoutabilityView[]): ConnectionRoutabilityView[] {
  const listed = connections.filter((c) => needsAttention(c.status));
  return [...listed.filter(isOut), ...listed.filter((c) => c.status.routable), ...listed.filter(isOff)];
}

export function ConnectionsHealth({ health }: { health: HealthView }) {
  const total = health.connections.length;
  const routable = health.connections.filter((c) => c.status.routable).length;
  const out = health.connections.filter(isOut).length;
  const off = health.connections.filter(isOff).length;
  const listed = attentionList(health.connections);
  return (
    <>
      <p className="health-line" aria-label="Connections in rotation">
        <strong>{formatInt(routable)} routable</strong> · <strong>{formatInt(out)} out of rotation</strong>
        {off > 0 && <> · {formatInt(off)} switched off</>}
        <span className="muted"> (of {formatCount(total, "connection")})</span>
      </p>
      {listed.length > 0 ? (
        <ul className="plain-list health-list" aria-label="Connections needing attention">
          {listed.map((c) => (
            <li key={c.id}>
              <ConnectionName id={c.id} name={c.name} />
              <StatusBadge status={c.status} showDetail />
            </li>
          ))}
        </ul>
      ) : total > 0 ? (
        <p className="muted">Every connection is in rotation.</p>
      ) : (
        <p className="muted">
          No connections yet: add one on the <a href="#/connections">Connections</a> page.
        </p>
      )}
      <p className="small">
        <a href="#/cooldowns">Cooldown Manager</a> · <a href="#/model-lockout">Model lockouts</a>:{" "}
        {formatInt(health.activeLockouts)} active
      </p>
    </>
  );
}

export function ConnectionsHealthCard() {
  const health = useHealthQuery();
  return (
    <section className="card" aria-labelledby="health-title">
      <header className="card-header">
        <h2 id="health-title">Connections</h2>
      </header>
      {health.isPending ? (
        <Loading label="Loading connection status…" />
      ) : health.isError ? (
        <ErrorState title="Could not load connection status" error={health.error} onRetry={() => void health.refetch()} />
      ) : (
        <ConnectionsHealth health={health.data} />
      )}
    </section>
  );
}

// The connections list: provider, name, status badge, live cooldown countdown,
// live load (in flight / cap / queued, sessions pinned), and the row actions (edit,
// test, delete).
import type { ConnectionCooldownView, ConnectionFlowView, ConnectionView } from "../../../ipc/bindings";
import { ConfirmAction } from "../../../shared/ConfirmAction";
import { ConnectionName } from "../../../shared/ConnectionName";
import { Countdown } from "../../../shared/Countdown";
import { FlowLoad } from "../../../shared/FlowLoad";
import { formatCount } from "../../../shared/format";
import { ConnectionStatusBadge } from "../../../shared/StatusBadge";
import { Table } from "../../../shared/Table";
import { useNow } from "../../../shared/useNow";

/** Sessions kept on this connection by session affinity; nothing when none (or affinity is off). */
function PinnedSessions({ count }: { count: number | undefined }) {
  if (!count) return null;
  return <div className="small">{formatCount(count, "session")} pinned</div>;
}

export function ConnectionsTable({
  connections,
  cooldowns,
  flows,
  testingId,
  onEdit,
  onTest,
  onDelete,
}: {
  connections: ConnectionView[];
  /** Cooldown rows by connection id; undefined while unknown. */
  cooldowns: Map<string, ConnectionCooldownView> | undefined;
  /** Live flow state by connection id; undefined while unknown. */
  flows: Map<string, ConnectionFlowView> | undefined;
  testingId: string | null;
  onEdit: (c: ConnectionView) => void;
  onTest: (c: ConnectionView) => void;
  onDelete: (c: ConnectionView) => Promise<unknown>;
}) {
  const now = useNow();
  const sorted = [...connections].sort(
    (a, b) => a.provider.localeCompare(b.provider) || a.priority - b.priority || a.name.localeCompare(b.name),
  );
  return (
    <Table
      caption="Connections"
      columns={["Provider", "Name", "Status", "Cooldown", "Load", "Priority", "Models"]}
      actions
    >
      <tbody>
        {sorted.map((c) => {
          const cd = cooldowns?.get(c.id);
          const status = cooldowns === undefined ? null : (cd?.status ?? "active");
          const laneUntil = c.claudeWall?.laneActiveUntil ?? null;
          const flow = flows?.get(c.id);
          return (
            <tr key={c.id}>
              <td>{c.provider}</td>
              <th scope="row">
                <ConnectionName id={c.id} name={c.name} />
              </th>
              <td>
                <ConnectionStatusBadge status={status} enabled={c.enabled} />
                {laneUntil !== null && laneUntil > now && <span className="badge badge-info">Slow lane</span>}
              </td>
              <td>
                {cd && cd.status === "unavailable" ? (
                  <Countdown expiresAt={cd.rateLimitedUntil} expiredLabel="ending" />
                ) : (
                  <span className="muted">—</span>
                )}
                {cd && cd.lockouts.length > 0 && (
                  <div className="small">
                    <a href="#/model-lockout">
                      {cd.lockouts.length} model lockout{cd.lockouts.length === 1 ? "" : "s"}
                    </a>
                  </div>
                )}
              </td>
              <td>
                <FlowLoad flow={flow} />
                <PinnedSessions count={flow?.pinnedSessions} />
              </td>
              <td>{c.priority}</td>
              <td className="small">
                {c.models.length ? (
                  <span title={c.models.join(", ")}>
                    {c.models.slice(0, 3).join(", ")}
                    {c.models.length > 3 ? ` +${c.models.length - 3}` : ""}
                  </span>
                ) : (
                  <span className="muted">any</span>
                )}
              </td>
              <td className="actions">
                <button
                  type="button"
                  className="btn btn-small"
                  aria-label={`Edit connection ${c.name}`}
                  onClick={() => onEdit(c)}
                >
                  Edit
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  aria-label={`Test connection ${c.name}`}
                  disabled={testingId === c.id}
                  onClick={() => onTest(c)}
                >
                  {testingId === c.id ? "Testing…" : "Test"}
                </button>
                <ConfirmAction
                  label="Delete"
                  accessibleLabel={`Delete connection ${c.name}`}
                  prompt={`Delete “${c.name}”? Its credentials are removed.`}
                  confirmLabel="Delete connection"
                  onConfirm={() => onDelete(c)}
                />
              </td>
            </tr>
          );
        })}
      </tbody>
    </Table>
  );
}

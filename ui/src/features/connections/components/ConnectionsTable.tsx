// The connections list: provider, name, the derived status (badge, countdown to its
// end, why in words, the latest Test), the account's usage windows, live load (in
// flight / cap / queued, sessions pinned), and the row actions (edit, test, delete).
import type { ConnectionFlowView, ConnectionView, LastTestView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { ConfirmAction } from "../../../shared/ConfirmAction";
import { ConnectionName } from "../../../shared/ConnectionName";
import { FlowLoad } from "../../../shared/FlowLoad";
import { formatCount, formatInstant, formatRemaining } from "../../../shared/format";
import { StatusBadge } from "../../../shared/StatusBadge";
import { Table } from "../../../shared/Table";
import { useNow } from "../../../shared/useNow";
import { UsageSummary } from "./Usage";

/** Sessions kept on this connection by session affinity; nothing when none (or affinity is off). */
function PinnedSessions({ count }: { count: number | undefined }) {
  if (!count) return null;
  return <div className="small">{formatCount(count, "session")} pinned</div>;
}

/** The latest Test on this connection (since the gateway started), in a line. */
function LastTest({ test }: { test: LastTestView | null }) {
  if (test === null) return null;
  return (
    <div className="small" title={test.message}>
      <span className={test.ok ? "muted" : "usage-danger"}>Last Test {test.ok ? "passed" : "failed"}</span>{" "}
      <span className="muted">
        <Ago at={test.at} />
      </span>
    </div>
  );
}

/** An OAuth account's access-token expiry (the gateway refreshes it when it is used). */
function TokenExpiry({ at }: { at: number | null }) {
  const now = useNow();
  if (at === null) return null;
  const left = at - now;
  return (
    <div className="small muted" title={formatInstant(at)}>
      {left > 0 ? `Token expires in ${formatRemaining(left).split(" ").slice(0, 2).join(" ")}` : "Token expired (refreshed on next use)"}
    </div>
  );
}

export function ConnectionsTable({
  connections,
  flows,
  testingId,
  onEdit,
  onTest,
  onDelete,
}: {
  connections: ConnectionView[];
  /** Live flow state by connection id; undefined while unknown. */
  flows: Map<string, ConnectionFlowView> | undefined;
  testingId: string | null;
  onEdit: (c: ConnectionView) => void;
  onTest: (c: ConnectionView) => void;
  onDelete: (c: ConnectionView) => Promise<unknown>;
}) {
  const sorted = [...connections].sort(
    (a, b) => a.provider.localeCompare(b.provider) || a.priority - b.priority || a.name.localeCompare(b.name),
  );
  return (
    <Table
      caption="Connections"
      columns={["Provider", "Name", "Status", "Usage", "Load", "Priority", "Models"]}
      actions
    >
      <tbody>
        {sorted.map((c) => {
          const locked = c.status.lockedModels.length;
          const flow = flows?.get(c.id);
          return (
            <tr key={c.id}>
              <td>{c.provider}</td>
              <th scope="row">
                <ConnectionName id={c.id} name={c.name} />
              </th>
              <td>
                <StatusBadge status={c.status} showDetail />
                {locked > 0 && (
                  <div className="small">
                    <a href="#/model-lockout">{formatCount(locked, "model lockout")}</a>
                  </div>
                )}
                <LastTest test={c.lastTest} />
                {c.authKind === "oauth" && <TokenExpiry at={c.tokenExpiresAt} />}
              </td>
              <td>
                <UsageSummary usage={c.usage} />
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

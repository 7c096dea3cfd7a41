// The client requests, newest first: when, model, client key, how it ended (with the
// status the agent received), the connection that served it, attempts and latency.
// A row opens its detail (the row itself, or its Details button from the keyboard).
import type { RequestEntryView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { ConnectionName } from "../../../shared/ConnectionName";
import { formatInt } from "../../../shared/format";
import { Table } from "../../../shared/Table";
import { OutcomeBadge } from "./badges";

export function RequestsTable({
  requests,
  selected,
  onSelect,
  connectionNames,
  keyNames,
}: {
  requests: RequestEntryView[];
  selected: string | null;
  onSelect: (requestId: string) => void;
  connectionNames: Map<string, string>;
  keyNames: Map<string, string>;
}) {
  return (
    <Table
      caption="Client requests, newest first"
      columns={["When", "Model", "Client key", "Outcome", "Connection", "Attempts", "Latency"]}
      actions
    >
      <tbody>
        {requests.map((r) => (
          <tr
            key={r.requestId}
            className={r.requestId === selected ? "selectable row-selected" : "selectable"}
            onClick={() => onSelect(r.requestId)}
          >
            <td>
              <Ago at={r.at} />
            </td>
            <th scope="row">
              <code>{r.model}</code>
            </th>
            <td>{r.apiKeyId === null ? <span className="muted">none</span> : (keyNames.get(r.apiKeyId) ?? <code>{r.apiKeyId}</code>)}</td>
            <td>
              <OutcomeBadge outcome={r.outcome} />
              <span className="small">{r.status}</span>
              {r.errorCode && (
                <div>
                  <code className="small">{r.errorCode}</code>
                </div>
              )}
            </td>
            <td>
              {r.connection === null ? (
                <span className="muted">—</span>
              ) : (
                <ConnectionName id={r.connection} name={connectionNames.get(r.connection)} />
              )}
            </td>
            <td>{r.attempts}</td>
            <td>{formatInt(r.latencyMs)} ms</td>
            <td className="actions">
              <button
                type="button"
                className="btn btn-small"
                aria-label={`Details of request ${r.requestId}`}
                aria-pressed={r.requestId === selected}
                onClick={(e) => {
                  e.stopPropagation();
                  onSelect(r.requestId);
                }}
              >
                Details
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

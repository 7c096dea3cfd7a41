// Connections out of routing: cooling connections and their model lockouts are
// clearable; terminal ones are listed with their reason and never cleared here.
import type { ConnectionCooldownView } from "../../../ipc/bindings";
import { Countdown } from "../../../shared/Countdown";
import { humanize } from "../../../shared/format";
import { ConnectionStatusBadge, isTerminal } from "../../../shared/StatusBadge";
import { Table } from "../../../shared/Table";

function Reason({ row }: { row: ConnectionCooldownView }) {
  const parts = [
    row.lastErrorKind ? humanize(row.lastErrorKind) : null,
    row.errorCode !== null ? `HTTP ${row.errorCode}` : null,
  ].filter(Boolean);
  if (parts.length === 0 && !row.lastError) return <span className="muted">—</span>;
  return (
    <>
      {parts.join(", ")}
      {row.lastError ? <div className="small muted">{row.lastError}</div> : null}
    </>
  );
}

export function CooldownTable({
  rows,
  selected,
  onToggle,
  onClear,
  busy,
}: {
  rows: ConnectionCooldownView[];
  selected: Set<string>;
  onToggle: (connection: string) => void;
  onClear: (connection: string) => void;
  busy: boolean;
}) {
  return (
    <Table
      caption="Connections taken out of routing"
      columns={[
        <span className="sr-only">Select</span>,
        "Connection",
        "Provider",
        "Status",
        "Reason",
        "Back in",
        "Backoff level",
        "Model lockouts",
      ]}
      actions
    >
      <tbody>
        {rows.map((row) => {
          const terminal = isTerminal(row.status);
          return (
            <tr key={row.connection} className={terminal ? "row-terminal" : undefined}>
              <td>
                {terminal ? null : (
                  <input
                    type="checkbox"
                    aria-label={`Select ${row.connection}`}
                    checked={selected.has(row.connection)}
                    onChange={() => onToggle(row.connection)}
                  />
                )}
              </td>
              <th scope="row">{row.connection}</th>
              <td>{row.provider}</td>
              <td>
                <ConnectionStatusBadge status={row.status} />
              </td>
              <td>
                <Reason row={row} />
              </td>
              <td>
                {row.status === "unavailable" ? (
                  <Countdown expiresAt={row.rateLimitedUntil} expiredLabel="ending" />
                ) : terminal ? (
                  <span className="muted">no timer</span>
                ) : (
                  <span className="muted">—</span>
                )}
              </td>
              <td>{row.backoffLevel}</td>
              <td>
                {row.lockouts.length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  <ul className="plain-list">
                    {row.lockouts.map((l) => (
                      <li key={l.model}>
                        <code>{l.model}</code> <Countdown expiresAt={l.expiresAt} expiredLabel="ending" />
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td className={terminal ? "terminal-note" : "actions"}>
                {terminal ? (
                  <span className="small">
                    Terminal: fix the credentials or account, then save the connection. Not cleared here.
                  </span>
                ) : (
                  <button
                    type="button"
                    className="btn btn-small"
                    aria-label={`Clear cooldown of ${row.connection}`}
                    disabled={busy}
                    onClick={() => onClear(row.connection)}
                  >
                    Clear
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </Table>
  );
}

// Connections out of routing, each with the status every page shows (the gateway's
// derived status: badge, countdown, why in words) and the raw upstream text on
// demand. Cooling connections and their model lockouts are clearable; terminal ones
// are never cleared here; an open breaker or a paused gateway point to where they are
// undone. Fits a 1024 px window.
import type { ConnectionCooldownView, RoutabilityView } from "../../../ipc/bindings";
import { ConnectionName } from "../../../shared/ConnectionName";
import { Countdown } from "../../../shared/Countdown";
import { errorKindWords } from "../../../shared/errorWords";
import { humanize } from "../../../shared/format";
import { isTerminal, StatusBadge } from "../../../shared/StatusBadge";
import { Table } from "../../../shared/Table";

/** One connection out of routing: its derived status and its cooldown row, when it has them. */
export type OutOfRoutingRow = {
  id: string;
  provider: string;
  /** Display name; undefined when the connection list does not have it. */
  name: string | undefined;
  /** The derived status; undefined when the connection list does not have it. */
  status: RoutabilityView | undefined;
  cooldown: ConnectionCooldownView | undefined;
};

/** Whether Clear does something for this row: it cools down or has lockouts, and is not terminal. */
export function isClearable(row: OutOfRoutingRow): boolean {
  const cd = row.cooldown;
  return cd !== undefined && !isTerminal(cd.status) && (cd.status === "unavailable" || cd.lockouts.length > 0);
}

/** The last upstream error in words: "rate limited by the upstream (HTTP 429)". */
function lastErrorWords(cd: ConnectionCooldownView): string | null {
  if (!cd.lastErrorKind && cd.errorCode === null) return null;
  const words = cd.lastErrorKind ? errorKindWords(cd.lastErrorKind) : "an upstream failure";
  return cd.errorCode !== null ? `${words} (HTTP ${cd.errorCode})` : words;
}

function Reason({ row }: { row: OutOfRoutingRow }) {
  const cd = row.cooldown;
  const lastError = cd ? lastErrorWords(cd) : null;
  // Cooling and terminal statuses already say the last error in their sentence.
  const saysError = row.status?.state === "cooling" || row.status?.state === "terminal";
  const words = row.status?.detail ?? (lastError ? `Last error: ${lastError}.` : null);
  return (
    <>
      {words ?? <span className="muted">—</span>}
      {row.status && !saysError && lastError && <div className="small muted">Last error: {lastError}.</div>}
      {cd && cd.backoffLevel > 0 && <div className="small muted">Backoff level {cd.backoffLevel}</div>}
      {cd?.lastError && (
        <details className="raw">
          <summary>Raw upstream answer</summary>
          <pre>{cd.lastError}</pre>
        </details>
      )}
    </>
  );
}

/** Where a status that Clear does not undo is undone. */
function Elsewhere({ row }: { row: OutOfRoutingRow }) {
  if (row.cooldown && isTerminal(row.cooldown.status)) {
    return <span className="small">Fix the credentials or account, then save the connection. Not cleared here.</span>;
  }
  switch (row.status?.state) {
    case "breaker-open":
      return (
        <a className="small" href="#/resilience">
          Breaker: Resilience
        </a>
      );
    case "paused":
      return (
        <a className="small" href="#/overview">
          Resume: Overview
        </a>
      );
    default:
      return null;
  }
}

export function CooldownTable({
  rows,
  selected,
  onToggle,
  onClear,
  busy,
}: {
  rows: OutOfRoutingRow[];
  selected: Set<string>;
  onToggle: (connection: string) => void;
  onClear: (connection: string) => void;
  busy: boolean;
}) {
  return (
    <Table
      caption="Connections taken out of routing"
      className="cooldown-table"
      columns={[<span className="sr-only">Select</span>, "Connection", "Status", "Reason", "Model lockouts"]}
      actions
    >
      <tbody>
        {rows.map((row) => {
          const clearable = isClearable(row);
          const terminal = row.cooldown !== undefined && isTerminal(row.cooldown.status);
          const lockouts = row.cooldown?.lockouts ?? [];
          return (
            <tr key={row.id} className={terminal ? "row-terminal" : undefined}>
              <td>
                {clearable && (
                  <input
                    type="checkbox"
                    aria-label={`Select ${row.id}`}
                    checked={selected.has(row.id)}
                    onChange={() => onToggle(row.id)}
                  />
                )}
              </td>
              <th scope="row" aria-label={row.id}>
                <ConnectionName id={row.id} name={row.name} provider={row.provider} />
              </th>
              <td>
                {row.status ? (
                  <StatusBadge status={row.status} />
                ) : row.cooldown ? (
                  <span className="badge badge-muted">{humanize(row.cooldown.status)}</span>
                ) : null}
              </td>
              <td className="reason-cell">
                <Reason row={row} />
              </td>
              <td>
                {lockouts.length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  <ul className="plain-list">
                    {lockouts.map((l) => (
                      <li key={l.model}>
                        <code>{l.model}</code> <Countdown expiresAt={l.expiresAt} expiredLabel="ending" />
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td className={clearable ? "actions" : "terminal-note"}>
                {clearable ? (
                  <button
                    type="button"
                    className="btn btn-small"
                    aria-label={`Clear cooldown of ${row.id}`}
                    disabled={busy}
                    onClick={() => onClear(row.id)}
                  >
                    Clear
                  </button>
                ) : (
                  <Elsewhere row={row} />
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </Table>
  );
}

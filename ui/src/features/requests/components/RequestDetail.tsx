// One client request: what the agent received, every upstream attempt (connection,
// model, status, latency, bytes, tokens as reported, error in words) and why it went where it went (how
// the model name matched, the strategy, each candidate with its fate, rank and
// reason, and the further decisions). There is never a secret or a body to show.
import type { RequestDetailView, TokenUsageView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { ConnectionName } from "../../../shared/ConnectionName";
import { CopyButton } from "../../../shared/CopyButton";
import { errorKindWords } from "../../../shared/errorWords";
import { formatInstant, formatInt } from "../../../shared/format";
import { EmptyState } from "../../../shared/states";
import { Table } from "../../../shared/Table";
import { FateBadge, OutcomeBadge } from "./badges";

/** 1234 → "1.2 KB"; small counts in bytes. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${formatInt(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** "1,200 in (+3,000 cached) · 85 out": the prompt with its cached part, then the output. */
export function formatTokens(t: TokenUsageView): string {
  const cached = t.cacheRead + t.cacheWrite;
  const input = `${formatInt(t.input + cached)} in${cached > 0 ? ` (${formatInt(cached)} cached)` : ""}`;
  return `${input} · ${formatInt(t.output)} out`;
}

function Attempts({ detail, names }: { detail: RequestDetailView; names: Map<string, string> }) {
  if (detail.attempts.length === 0) {
    return (
      <p className="muted">
        No upstream attempt: the gateway answered the agent itself
        {detail.request.errorCode ? (
          <>
            {" "}
            (<code>{detail.request.errorCode}</code>)
          </>
        ) : null}
        .
      </p>
    );
  }
  return (
    <Table caption="Upstream attempts, in order" columns={["#", "Connection", "Model", "Status", "Latency", "Bytes", "Tokens", "Error"]}
    >
      <tbody>
        {detail.attempts.map((a, i) => (
          <tr key={a.id}>
            <td>{i + 1}</td>
            <th scope="row">
              <ConnectionName id={a.connectionId} name={names.get(a.connectionId)} provider={a.provider} />
            </th>
            <td>
              <code>{a.model}</code>
            </td>
            <td>{a.status ?? <span className="muted">none</span>}</td>
            <td>{formatInt(a.latencyMs)} ms</td>
            <td>{formatBytes(a.bytes)}</td>
            <td>{a.tokens ? formatTokens(a.tokens) : <span className="muted">not reported</span>}</td>
            <td>
              {a.errorKind ? (
                <span title={a.errorKind}>{errorKindWords(a.errorKind)}</span>
              ) : (
                <span className="muted">—</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

function Route({ detail, names }: { detail: RequestDetailView; names: Map<string, string> }) {
  const { route } = detail;
  return (
    <>
      <dl className="kv">
        <dt>Model matched as</dt>
        <dd>
          <code>{route.resolvedAs}</code>
        </dd>
        <dt>Strategy</dt>
        <dd>{route.strategy}</dd>
      </dl>
      {route.candidates.length === 0 ? (
        <p className="muted">No connection serves this model name: there was no candidate.</p>
      ) : (
        <Table caption="Candidates, in plan order" columns={["Rank", "Connection", "Model", "Fate", "Why"]}>
          <tbody>
            {route.candidates.map((c) => (
              <tr key={`${c.connection}\n${c.model}`}>
                <td>{c.rank ?? <span className="muted">—</span>}</td>
                <th scope="row">
                  <ConnectionName id={c.connection} name={names.get(c.connection)} provider={c.provider} />
                </th>
                <td>
                  <code>{c.model}</code>
                </td>
                <td>
                  <FateBadge fate={c.fate} />
                </td>
                <td>{c.reason ?? <span className="muted">—</span>}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      {route.notes.length > 0 && (
        <ul className="note-list" aria-label="Further decisions">
          {route.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </>
  );
}

export function RequestDetail({
  detail,
  connectionNames,
  keyNames,
}: {
  detail: RequestDetailView;
  connectionNames: Map<string, string>;
  keyNames: Map<string, string>;
}) {
  const r = detail.request;
  return (
    <>
      <dl className="kv">
        <dt>Request id</dt>
        <dd className="kv-with-action">
          <code>{r.requestId}</code>
          <CopyButton text={r.requestId} label="Copy request id" />
        </dd>
        <dt>Arrived</dt>
        <dd>
          {formatInstant(r.at)} (<Ago at={r.at} />)
        </dd>
        <dt>Route</dt>
        <dd>
          <code>{r.route}</code>
        </dd>
        <dt>Model asked for</dt>
        <dd>
          <code>{r.model}</code>
        </dd>
        <dt>Client key</dt>
        <dd>{r.apiKeyId === null ? <span className="muted">none</span> : (keyNames.get(r.apiKeyId) ?? <code>{r.apiKeyId}</code>)}</dd>
        <dt>Outcome</dt>
        <dd>
          <OutcomeBadge outcome={r.outcome} /> the agent received HTTP {r.status}
          {r.errorCode && (
            <>
              {" "}
              (<code>{r.errorCode}</code>)
            </>
          )}
        </dd>
        <dt>Connection</dt>
        <dd>{r.connection === null ? <span className="muted">none</span> : (connectionNames.get(r.connection) ?? r.connection)}</dd>
        <dt>Latency</dt>
        <dd>{formatInt(r.latencyMs)} ms to the answer’s headers</dd>
      </dl>
      <h3>Attempts</h3>
      <Attempts detail={detail} names={connectionNames} />
      <h3>Why this route</h3>
      <Route detail={detail} names={connectionNames} />
    </>
  );
}

/** The detail's place when the request is not (or no longer) in the log. */
export function RequestGone({ requestId }: { requestId: string }) {
  return (
    <EmptyState title="This request is not in the log">
      No request <code>{requestId}</code> is kept (it may be older than the log keeps, or the id is mistyped).
    </EmptyState>
  );
}

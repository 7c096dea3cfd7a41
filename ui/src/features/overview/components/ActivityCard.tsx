// Request counts for the last hour and day, resilience health counters, and the most
// recent failed attempts.
import type { HealthView, MonitoringSummaryView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { formatInt } from "../../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../../shared/states";
import { Table } from "../../../shared/Table";
import { useHealthQuery, useSummaryQuery } from "../api";

function Stat({ label, value, tone }: { label: string; value: number; tone?: "error" }) {
  return (
    <div className={`stat${tone === "error" && value > 0 ? " stat-error" : ""}`}>
      <span className="stat-value">{formatInt(value)}</span>
      <span className="stat-label">{label}</span>
    </div>
  );
}

export function RequestStats({ summary, health }: { summary: MonitoringSummaryView; health?: HealthView }) {
  return (
    <div className="stats" aria-label="Request counts" role="group">
      <Stat label="Requests, last hour" value={summary.requestsLastHour} />
      <Stat label="Errors, last hour" value={summary.errorsLastHour} tone="error" />
      <Stat label="Requests, last 24 h" value={summary.requestsLastDay} />
      <Stat label="Errors, last 24 h" value={summary.errorsLastDay} tone="error" />
      {health && (
        <>
          <a className="stat stat-link" href="#/cooldowns">
            <span className="stat-value">{formatInt(health.connectionsOutOfRotation)}</span>
            <span className="stat-label">Connections out of rotation</span>
          </a>
          <a className="stat stat-link" href="#/model-lockout">
            <span className="stat-value">{formatInt(health.activeLockouts)}</span>
            <span className="stat-label">Active model lockouts</span>
          </a>
        </>
      )}
    </div>
  );
}

export function RecentErrors({ summary }: { summary: MonitoringSummaryView }) {
  if (summary.recentErrors.length === 0) {
    return (
      <EmptyState title="No recent errors">
        Failed upstream attempts (timeouts, 429s, 5xx, broken streams) appear here with their status and error
        kind, newest first.
      </EmptyState>
    );
  }
  return (
    <Table
      caption="Recent errors, newest first"
      columns={["When", "Route", "Provider", "Connection", "Model", "Status", "Error", "Latency"]}
    >
      <tbody>
        {summary.recentErrors.map((e) => (
          <tr key={e.id}>
            <td>
              {e.at === null ? (
                <span className="muted">—</span>
              ) : (
                <Ago at={e.at} />
              )}
            </td>
            <td>
              <code>{e.route}</code>
            </td>
            <td>{e.provider}</td>
            <td>{e.connectionId}</td>
            <td>
              <code>{e.model}</code>
            </td>
            <td>{e.status ?? "—"}</td>
            <td>{e.errorKind ?? "—"}</td>
            <td>{formatInt(e.latencyMs)} ms</td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

export function ActivityCard() {
  const summary = useSummaryQuery();
  const health = useHealthQuery();
  return (
    <section className="card card-wide" aria-labelledby="activity-title">
      <header className="card-header">
        <h2 id="activity-title">Activity</h2>
      </header>
      {summary.isPending ? (
        <Loading label="Loading request counts…" />
      ) : summary.isError ? (
        <ErrorState title="Could not load request counts" error={summary.error} onRetry={() => void summary.refetch()} />
      ) : (
        <>
          <RequestStats summary={summary.data} health={health.data} />
          <h3>Recent errors</h3>
          <RecentErrors summary={summary.data} />
        </>
      )}
    </section>
  );
}

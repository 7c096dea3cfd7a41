// What the agents saw (their requests and how each ended: served, served after a
// failover absorbed failed attempts, or an error they received) apart from what the
// gateway did upstream (attempts, failed attempts), for the last hour and 24 hours,
// and the most recent failed attempts.
import type { MonitoringSummaryView, RequestCountsView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { errorKindWords } from "../../../shared/errorWords";
import { formatInt } from "../../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../../shared/states";
import { Table } from "../../../shared/Table";
import { useSummaryQuery } from "../api";

function Stat({ label, value, day, tone }: { label: string; value: number; day: number; tone?: "error" }) {
  return (
    <div className={`stat${tone === "error" && value > 0 ? " stat-error" : ""}`}>
      <span className="stat-value">{formatInt(value)}</span>
      <span className="stat-label">{label}</span>
      <span className="stat-label">24 h: {formatInt(day)}</span>
    </div>
  );
}

function ClientStats({ hour, day }: { hour: RequestCountsView; day: RequestCountsView }) {
  return (
    <div className="stats" aria-label="Agent requests" role="group">
      <Stat label="Requests, last hour" value={hour.requests} day={day.requests} />
      <Stat label="Served" value={hour.served} day={day.served} />
      <Stat label="Served after failover" value={hour.servedAfterFailover} day={day.servedAfterFailover} />
      <Stat label="Errors agents received" value={hour.errors} day={day.errors} tone="error" />
    </div>
  );
}

export function RequestStats({ summary }: { summary: MonitoringSummaryView }) {
  const absorbed = summary.clientsLastHour.servedAfterFailover;
  return (
    <>
      <h3 className="stats-group-title">What your agents saw</h3>
      <ClientStats hour={summary.clientsLastHour} day={summary.clientsLastDay} />
      <h3 className="stats-group-title">What the gateway did upstream</h3>
      <div className="stats" aria-label="Upstream attempts" role="group">
        <Stat label="Attempts, last hour" value={summary.attemptsLastHour} day={summary.attemptsLastDay} />
        <Stat
          label="Failed attempts"
          value={summary.failedAttemptsLastHour}
          day={summary.failedAttemptsLastDay}
          tone="error"
        />
      </div>
      <p className="small muted">
        One request may take several attempts: a failed attempt is absorbed when another connection serves the
        request{absorbed > 0 ? ` (${formatInt(absorbed)} in the last hour)` : ""}. See each one on the{" "}
        <a href="#/requests">Requests</a> page.
      </p>
    </>
  );
}

export function RecentErrors({ summary }: { summary: MonitoringSummaryView }) {
  if (summary.recentErrors.length === 0) {
    return (
      <EmptyState title="No recent errors">
        Failed upstream attempts (timeouts, 429s, 5xx, broken streams) appear here with their status and error
        kind, newest first, whether a failover absorbed them or not.
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
            <td>{e.errorKind ? <span title={e.errorKind}>{errorKindWords(e.errorKind)}</span> : "—"}</td>
            <td>{formatInt(e.latencyMs)} ms</td>
          </tr>
        ))}
      </tbody>
    </Table>
  );
}

export function ActivityCard() {
  const summary = useSummaryQuery();
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
          <RequestStats summary={summary.data} />
          <h3>Recent failed attempts</h3>
          <RecentErrors summary={summary.data} />
        </>
      )}
    </section>
  );
}

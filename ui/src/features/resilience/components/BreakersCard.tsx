// Live provider breaker states with per-provider and global reset.
import { useState } from "react";
import type { ProviderBreakerView } from "../../../ipc/bindings";
import { Countdown } from "../../../shared/Countdown";
import { formatAgo, formatInstant, humanize } from "../../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../../shared/states";
import { BreakerBadge } from "../../../shared/StatusBadge";
import { Table } from "../../../shared/Table";
import { useNow } from "../../../shared/useNow";
import { useBreakersQuery, useResetBreakers } from "../api";

function probeAt(b: ProviderBreakerView, fetchedAt: number): number | null {
  if (b.openUntil !== null) return b.openUntil;
  return b.retryAfterMs > 0 ? fetchedAt + b.retryAfterMs : null;
}

export function BreakersCard() {
  const breakers = useBreakersQuery();
  const reset = useResetBreakers();
  const now = useNow();
  const [message, setMessage] = useState<string | null>(null);

  const doReset = (provider: string | null) => {
    setMessage(null);
    reset.mutate(
      { provider },
      {
        onSuccess: (r) =>
          setMessage(
            `${provider ? `Breaker of ${provider}` : "All breakers"}: ${r.resetCount} reset to closed.`,
          ),
        onError: (e) => setMessage(`Reset failed: ${e.message}`),
      },
    );
  };

  return (
    <section className="card card-wide" aria-labelledby="breakers-title">
      <header className="card-header">
        <h2 id="breakers-title">Provider breakers (live)</h2>
        {breakers.isSuccess && breakers.data.length > 0 && (
          <button type="button" className="btn btn-small" disabled={reset.isPending} onClick={() => doReset(null)}>
            Reset all breakers
          </button>
        )}
      </header>
      <p className="card-status" role="status">
        {message}
      </p>
      {breakers.isPending ? (
        <Loading label="Loading breaker states…" />
      ) : breakers.isError ? (
        <ErrorState title="Could not load breaker states" error={breakers.error} onRetry={() => void breakers.refetch()} />
      ) : breakers.data.length === 0 ? (
        <EmptyState title="No provider breakers yet">
          Each provider gets a breaker once the gateway has routed traffic to it. Its state, failure count and the
          time until the next probe then appear here and update live.
        </EmptyState>
      ) : (
        <Table
          caption="Provider breaker states"
          columns={["Provider", "State", "Failures", "Last failure", "Probe allowed in", "Window gate"]}
          actions
        >
          <tbody>
            {breakers.data.map((b) => {
              const probe = b.state === "OPEN" || b.retryAfterMs > 0 ? probeAt(b, breakers.dataUpdatedAt) : null;
              const gateActive = b.gateCoolingUntil !== null && b.gateCoolingUntil > now;
              return (
                <tr key={b.provider}>
                  <th scope="row">{b.provider}</th>
                  <td>
                    <BreakerBadge state={b.state} />
                  </td>
                  <td>
                    {b.failureCount}
                    <span className="muted small">
                      {" "}
                      (degrades at {b.degradationThreshold}, opens at {b.failureThreshold}
                      {b.openCycles > 0 ? `, ${b.openCycles} failed probes` : ""})
                    </span>
                  </td>
                  <td>
                    {b.lastFailureAt !== null ? (
                      <span title={formatInstant(b.lastFailureAt)}>
                        {b.lastFailureKind ? humanize(b.lastFailureKind) : "failure"}, {formatAgo(b.lastFailureAt, now)}
                      </span>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                  <td>{probe !== null ? <Countdown expiresAt={probe} expiredLabel="now" /> : <span className="muted">—</span>}</td>
                  <td>
                    {gateActive ? (
                      <>
                        cooling <Countdown expiresAt={b.gateCoolingUntil} />
                      </>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                  <td className="actions">
                    <button
                      type="button"
                      className="btn btn-small"
                      aria-label={`Reset breaker of ${b.provider}`}
                      disabled={reset.isPending}
                      onClick={() => doReset(b.provider)}
                    >
                      Reset
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </Table>
      )}
    </section>
  );
}

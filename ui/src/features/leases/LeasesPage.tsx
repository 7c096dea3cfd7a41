// Leases (SPEC §4.4): the active exclusive session leases, live, and Release. A
// released lease's owner is refused at its next request (409 lease-fence-stale).
import { useMemo, useState } from "react";
import type { LeaseView } from "../../ipc/bindings";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import { useConnectionsQuery, useLeasesQuery, useReleaseLease } from "./api";
import { holderOf, LeasesTable } from "./components/LeasesTable";

type Notice = { tone: "ok" | "error"; text: string };

export function LeasesPage() {
  const leases = useLeasesQuery();
  const connections = useConnectionsQuery();
  const release = useReleaseLease();
  const [notice, setNotice] = useState<Notice | null>(null);
  const names = useMemo(() => new Map((connections.data ?? []).map((c) => [c.id, c.name])), [connections.data]);

  const run = (lease: LeaseView) => {
    const what = `the lease of ${holderOf(lease)} on ${names.get(lease.connection) ?? lease.connection}`;
    setNotice(null);
    return release.mutateAsync(lease.id).then(
      () => setNotice({ tone: "ok", text: `Released ${what}. Its next request is refused as stale.` }),
      (e: Error & { code?: string }) =>
        setNotice(
          e.code === "not_found"
            ? { tone: "ok", text: `${what[0].toUpperCase()}${what.slice(1)} had already ended.` }
            : { tone: "error", text: `Could not release ${what}: ${e.message}` },
        ),
    );
  };

  return (
    <div className="page">
      <header className="page-header">
        <h1>Leases</h1>
        <p className="page-lead">
          Connections held exclusively by one agent session. A leased connection serves only its holder&apos;s
          requests; all other traffic keeps off it until the lease is released or lapses.
        </p>
      </header>
      <div className="card-grid">
        <section className="card card-wide" aria-labelledby="leases-title">
          <header className="card-header">
            <h2 id="leases-title">Active leases (live)</h2>
          </header>
          <p className={`notice${notice ? ` notice-${notice.tone}` : ""}`} role="status">
            {notice?.text}
          </p>
          {leases.isPending ? (
            <Loading label="Loading leases…" />
          ) : leases.isError ? (
            <ErrorState title="Could not load leases" error={leases.error} onRetry={() => void leases.refetch()} />
          ) : leases.data.leases.length === 0 ? (
            <EmptyState title="No exclusive leases">
              An agent whose client key has the <code>lease:exclusive</code> scope and allowed connections can lease
              one of them with <code>POST /api/v1/session-leases</code>. Its requests then use only that connection,
              and other traffic keeps off it.
            </EmptyState>
          ) : (
            <LeasesTable leases={leases.data.leases} names={names} onRelease={run} />
          )}
        </section>
      </div>
    </div>
  );
}

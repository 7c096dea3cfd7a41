// Requests: what happened to each of the agents' requests, newest first and live,
// filtered by status, connection, model, client key and time, older ones paged in
// with "Load more". A request's detail (`#/requests/<id>`) shows every upstream
// attempt and why the request went where it went.
import { useEffect, useMemo, useRef, useState } from "react";
import { ApiError } from "../../api/ApiError";
import { hrefFor, useRouteParam } from "../../router";
import { formatCount } from "../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import {
  NO_FILTERS,
  useConnectionsQuery,
  useKeysQuery,
  useRequestDetail,
  useRequestsQuery,
  type RequestFilters,
} from "./api";
import { RequestDetail, RequestGone } from "./components/RequestDetail";
import { RequestFiltersBar } from "./components/RequestFilters";
import { RequestsTable } from "./components/RequestsTable";

function isNotFound(e: unknown): boolean {
  return e instanceof ApiError && (e.code === "not_found" || e.status === 404);
}

function DetailCard({
  requestId,
  connectionNames,
  keyNames,
}: {
  requestId: string;
  connectionNames: Map<string, string>;
  keyNames: Map<string, string>;
}) {
  const detail = useRequestDetail(requestId);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [requestId]);
  return (
    <section className="card card-wide" aria-labelledby="request-detail-title">
      <header className="card-header">
        <h2 id="request-detail-title" ref={heading} tabIndex={-1}>
          Request detail
        </h2>
        <a className="btn btn-small" href={hrefFor("requests")}>
          Close
        </a>
      </header>
      {detail.isPending ? (
        <Loading label="Loading the request…" />
      ) : detail.isError ? (
        isNotFound(detail.error) ? (
          <RequestGone requestId={requestId} />
        ) : (
          <ErrorState title="Could not load the request" error={detail.error} onRetry={() => void detail.refetch()} />
        )
      ) : (
        <RequestDetail detail={detail.data} connectionNames={connectionNames} keyNames={keyNames} />
      )}
    </section>
  );
}

export function RequestsPage() {
  const selected = useRouteParam();
  const [filters, setFilters] = useState<RequestFilters>(NO_FILTERS);
  const requests = useRequestsQuery(filters);
  const connections = useConnectionsQuery();
  const keys = useKeysQuery();
  const connectionNames = useMemo(() => new Map((connections.data ?? []).map((c) => [c.id, c.name])), [connections.data]);
  const keyNames = useMemo(() => new Map((keys.data ?? []).map((k) => [k.id, k.name])), [keys.data]);
  const rows = useMemo(() => requests.data?.pages.flat() ?? [], [requests.data]);
  const models = useMemo(
    () => [...new Set([...rows.map((r) => r.model), ...(connections.data ?? []).flatMap((c) => c.models)])].sort(),
    [rows, connections.data],
  );
  const filtered = JSON.stringify(filters) !== JSON.stringify(NO_FILTERS);

  return (
    <div className="page">
      <header className="page-header">
        <h1>Requests</h1>
        <p className="page-lead">
          Every request your agents sent, newest first: how it ended for the agent, which connections were tried, and
          why the gateway chose them. Bodies and secrets are never kept.
        </p>
      </header>
      {selected !== null && (
        <DetailCard key={selected} requestId={selected} connectionNames={connectionNames} keyNames={keyNames} />
      )}
      <section className="card card-wide" aria-labelledby="requests-title">
        <header className="card-header">
          <h2 id="requests-title">Client requests (live)</h2>
          {requests.isSuccess && (
            <span className="muted small" role="status">
              {formatCount(rows.length, "request")} shown
            </span>
          )}
        </header>
        <RequestFiltersBar
          filters={filters}
          onChange={(change) => setFilters((f) => ({ ...f, ...change }))}
          connections={connections.data ?? []}
          keys={keys.data ?? []}
          models={models}
        />
        {requests.isPending ? (
          <Loading label="Loading requests…" />
        ) : requests.isError ? (
          <ErrorState title="Could not load requests" error={requests.error} onRetry={() => void requests.refetch()} />
        ) : rows.length === 0 ? (
          filtered ? (
            <EmptyState title="No request matches these filters">
              Widen the time range or set a filter back to “All” / “Any”.
            </EmptyState>
          ) : (
            <EmptyState title="No requests yet">
              Point an agent at the gateway (see the <a href={hrefFor("overview")}>Overview</a>): each request it sends
              appears here within two seconds, with how it ended and the route it took.
            </EmptyState>
          )
        ) : (
          <>
            <RequestsTable
              requests={rows}
              selected={selected}
              onSelect={(id) => {
                window.location.hash = hrefFor("requests", id);
              }}
              connectionNames={connectionNames}
              keyNames={keyNames}
            />
            {requests.hasNextPage && (
              <div className="card-actions">
                <button
                  type="button"
                  className="btn"
                  disabled={requests.isFetchingNextPage}
                  onClick={() => void requests.fetchNextPage()}
                >
                  {requests.isFetchingNextPage ? "Loading…" : "Load more"}
                </button>
              </div>
            )}
          </>
        )}
      </section>
    </div>
  );
}

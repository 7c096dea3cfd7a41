// Connections: the list with each one's derived status, usage windows and live load
// (and the shared gates over it), add (from a preset; a new connection is tested as
// soon as it is saved) / edit / delete / test, and the sessions pinned to them
// (session affinity). A Test's result shows on the row (the list is refetched). A
// Claude subscription account comes from importing Claude Code's login.
import { useMemo, useState } from "react";
import { isPreconditionFailed } from "../../api/ApiError";
import type { ConnectionTestResult, ConnectionView } from "../../ipc/bindings";
import { CHANGED_ELSEWHERE_TITLE } from "../../shared/ChangedElsewhere";
import { formatInt } from "../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import {
  useConnectionsQuery,
  useDeleteConnection,
  useRateLimitsQuery,
  useTestConnection,
} from "./api";
import { ConnectionForm } from "./components/ConnectionForm";
import { ConnectionsTable } from "./components/ConnectionsTable";
import { ImportClaudeLoginButton, type ImportOutcome } from "./components/ImportClaudeLogin";
import { PinnedSessionsPanel } from "./components/PinnedSessionsPanel";
import { SharedGates } from "./components/SharedGates";

type Editing = { mode: "add" } | { mode: "edit"; id: string } | null;

/** A message over the list; `reload` offers to refetch the list (a stale delete). */
type Notice = { tone: "ok" | "error"; text: string; reload?: boolean };

/** A Test's result; `before` says what led to it ("Added GLM."). */
function describeTest(c: ConnectionView, r: ConnectionTestResult, before = ""): Notice {
  const status = r.status === null ? "no HTTP status" : `HTTP ${r.status}`;
  return {
    tone: r.ok ? "ok" : "error",
    text: `${before}Test of ${c.name}: ${r.ok ? "OK" : "failed"} (${status}, ${formatInt(r.latencyMs)} ms). ${r.message}`,
  };
}

export function ConnectionsPage() {
  const connections = useConnectionsQuery();
  const rateLimits = useRateLimitsQuery();
  const test = useTestConnection();
  const del = useDeleteConnection();
  const [editing, setEditing] = useState<Editing>(null);
  const [notice, setNotice] = useState<Notice | null>(null);

  const flowMap = useMemo(
    () => (rateLimits.data ? new Map(rateLimits.data.connections.map((f) => [f.connectionId, f])) : undefined),
    [rateLimits.data],
  );
  const editingConnection =
    editing?.mode === "edit" ? connections.data?.find((c) => c.id === editing.id) : undefined;

  const runTest = (c: ConnectionView, before = "") => {
    setNotice(before ? { tone: "ok", text: `${before}Testing it…` } : null);
    test.mutate(c.id, {
      onSuccess: (r) => setNotice(describeTest(c, r, before)),
      onError: (e) => setNotice({ tone: "error", text: `${before}Test of ${c.name} could not run: ${e.message}` }),
    });
  };

  // The delete names the version of the connection the list shows: one changed
  // elsewhere since (412) is not deleted unseen.
  const remove = (c: ConnectionView) =>
    del
      .mutateAsync({ id: c.id, expectedVersion: c.version })
      .then(() => {
        setNotice({ tone: "ok", text: `Deleted ${c.name}.` });
        if (editing?.mode === "edit" && editing.id === c.id) setEditing(null);
      })
      .catch((e: Error) =>
        setNotice(
          isPreconditionFailed(e)
            ? {
                tone: "error",
                text: `${CHANGED_ELSEWHERE_TITLE}: ${c.name} changed somewhere else after this list was loaded, so it was not deleted. Reload the list, check it and delete again.`,
                reload: true,
              }
            : { tone: "error", text: `Could not delete ${c.name}: ${e.message}` },
        ),
      );

  // An imported login is a connection like any other: it shows on its row (token
  // expiry, and usage windows once it has answered).
  const imported = (outcome: ImportOutcome) => {
    if (outcome.ok) setEditing(null);
    setNotice({ tone: outcome.ok ? "ok" : "error", text: outcome.text });
  };

  const reloadList = () => {
    setNotice(null);
    void connections.refetch().then((r) => {
      if (r.isSuccess) setNotice({ tone: "ok", text: "Reloaded the connections. Nothing was deleted." });
    });
  };

  return (
    <div className="page">
      <header className="page-header page-header-row">
        <div>
          <h1>Connections</h1>
          <p className="page-lead">Provider accounts and keys the gateway spreads your agents’ traffic over.</p>
        </div>
        {editing === null && connections.isSuccess && (
          <div className="page-header-actions">
            <ImportClaudeLoginButton onResult={imported} />
            <button type="button" className="btn btn-primary" onClick={() => setEditing({ mode: "add" })}>
              Add connection
            </button>
          </div>
        )}
      </header>
      <p className={`notice${notice ? ` notice-${notice.tone}` : ""}`} role="status">
        {notice?.text}
        {notice?.reload && (
          <>
            {" "}
            <button type="button" className="btn btn-small" onClick={reloadList}>
              Reload connections
            </button>
          </>
        )}
      </p>
      {editing?.mode === "add" && (
        <ConnectionForm
          onImported={imported}
          onCancel={() => setEditing(null)}
          onDone={(saved) => {
            setEditing(null);
            // A new connection is tested at once: its result shows here and on its row.
            runTest(saved, `Added ${saved.name}. `);
          }}
        />
      )}
      {editing?.mode === "edit" && editingConnection && (
        <ConnectionForm
          key={editingConnection.id}
          connection={editingConnection}
          onCancel={() => setEditing(null)}
          onDone={(saved) => {
            setEditing(null);
            setNotice({ tone: "ok", text: `Saved ${saved.name}.` });
          }}
        />
      )}
      {connections.isPending ? (
        <Loading label="Loading connections…" />
      ) : connections.isError ? (
        <ErrorState
          title="Could not load connections"
          error={connections.error}
          onRetry={() => void connections.refetch()}
        />
      ) : connections.data.length === 0 ? (
        <EmptyState title="No connections yet">
          Add a provider account or API key (Claude subscription, Anthropic or OpenAI keys, GLM, OpenRouter,
          Ollama…). Each connection then appears here with its status and any cooldown counting down.
        </EmptyState>
      ) : (
        <>
          <SharedGates view={rateLimits.data} />
          <section className="card card-flush" aria-label="Connection list">
            {rateLimits.isError && (
              <p className="inline-error" role="alert">
                Live load (in flight, queued) is unavailable: {rateLimits.error.message}
              </p>
            )}
            <ConnectionsTable
              connections={connections.data}
              flows={flowMap}
              testingId={test.isPending ? (test.variables ?? null) : null}
              onEdit={(c) => {
                setNotice(null);
                setEditing({ mode: "edit", id: c.id });
              }}
              onTest={runTest}
              onDelete={remove}
            />
          </section>
          <PinnedSessionsPanel connections={connections.data} />
        </>
      )}
    </div>
  );
}

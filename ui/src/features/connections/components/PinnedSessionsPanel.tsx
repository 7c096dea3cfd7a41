// Session affinity on the Connections page (SPEC §4.4): which client session is kept
// on which connection, live, and Forget (one connection's pins, or all). With the TTL
// at 0 nothing is pinned, so the panel says where to turn affinity on instead.
import { useMemo, useState } from "react";
import type { ConnectionView, SessionPinsClear } from "../../../ipc/bindings";
import { hrefFor } from "../../../router";
import { formatCount, formatDuration } from "../../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../../shared/states";
import { useForgetSessions, useSessionPinsQuery } from "../api";
import { PinsTable } from "./PinsTable";

type Notice = { tone: "ok" | "error"; text: string };

function AffinityOff() {
  return (
    <EmptyState title="Session affinity is off">
      Each request is placed on its own, so an agent session may move between connections (and lose its prompt
      cache). To keep each session on one connection, set <strong>Session affinity TTL</strong> on the{" "}
      <a href={hrefFor("resilience")}>Resilience</a> page.
    </EmptyState>
  );
}

export function PinnedSessionsPanel({ connections }: { connections: ConnectionView[] }) {
  const sessions = useSessionPinsQuery();
  const forget = useForgetSessions();
  const [notice, setNotice] = useState<Notice | null>(null);
  const names = useMemo(() => new Map(connections.map((c) => [c.id, c.name])), [connections]);

  const run = (connection: string | null) => {
    const where = connection === null ? "" : ` on ${names.get(connection) ?? connection}`;
    const request: SessionPinsClear = connection === null ? {} : { connection };
    setNotice(null);
    forget.mutate(request, {
      onSuccess: (r) =>
        setNotice({
          tone: "ok",
          text: `Forgot ${formatCount(r.removed, "pinned session")}${where}. A forgotten session is placed afresh on its next request.`,
        }),
      onError: (e) => setNotice({ tone: "error", text: `Could not forget the sessions${where}: ${e.message}` }),
    });
  };

  const on = sessions.isSuccess && sessions.data.ttlMs > 0;
  return (
    <section className="card" aria-labelledby="pins-title">
      <header className="card-header">
        <h2 id="pins-title">Pinned sessions (live)</h2>
        {on && (
          <button
            type="button"
            className="btn btn-small"
            disabled={forget.isPending || sessions.data.pins.length === 0}
            onClick={() => run(null)}
          >
            Forget all
          </button>
        )}
      </header>
      {on && (
        <p className="card-description">
          Each agent session (Claude Code, Codex…) stays on one connection per provider, so its prompt cache stays
          warm. A pin lapses {formatDuration(sessions.data.ttlMs)} after the session&apos;s last request.
        </p>
      )}
      <p className={`notice${notice ? ` notice-${notice.tone}` : ""}`} role="status">
        {notice?.text}
      </p>
      {sessions.isPending ? (
        <Loading label="Loading pinned sessions…" />
      ) : sessions.isError ? (
        <ErrorState
          title="Could not load pinned sessions"
          error={sessions.error}
          onRetry={() => void sessions.refetch()}
        />
      ) : !on ? (
        <AffinityOff />
      ) : sessions.data.pins.length === 0 ? (
        <EmptyState title="No sessions pinned">
          A session is pinned to the connection that serves its first request, and listed here by a short hash of
          its id.
        </EmptyState>
      ) : (
        <PinsTable pins={sessions.data.pins} names={names} busy={forget.isPending} onForget={run} />
      )}
    </section>
  );
}

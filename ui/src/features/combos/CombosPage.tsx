// Combos: named target lists with a routing strategy. The list shows each combo's
// targets with, live, the connections they run on (status, cooldown, load, refreshed
// on change events and polled for load); create / edit / delete.
import { useMemo, useState } from "react";
import { ApiError, isPreconditionFailed } from "../../api/ApiError";
import type { ComboView, Versioned } from "../../ipc/bindings";
import { CHANGED_ELSEWHERE_TITLE } from "../../shared/ChangedElsewhere";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import { useCombosQuery, useConnectionsQuery, useCooldownsQuery, useDeleteCombo, useRateLimitsQuery } from "./api";
import { ComboCard } from "./components/ComboCard";
import { ComboForm } from "./components/ComboForm";

type Editing = { mode: "add" } | { mode: "edit"; name: string } | null;

/** A message over the list; `reload` offers to refetch the list (a stale delete). */
type Notice = { tone: "ok" | "error"; text: string; reload?: boolean };

function deleteFailure(c: ComboView, e: Error): Notice {
  if (isPreconditionFailed(e)) {
    return {
      tone: "error",
      text: `${CHANGED_ELSEWHERE_TITLE}: ${c.name} changed somewhere else after this list was loaded, so it was not deleted. Reload the list, check it and delete again.`,
      reload: true,
    };
  }
  if (e instanceof ApiError && e.code === "conflict") return { tone: "error", text: `${c.name} was not deleted: ${e.message}.` };
  return { tone: "error", text: `Could not delete ${c.name}: ${e.message}` };
}

export function CombosPage() {
  const combos = useCombosQuery();
  const connections = useConnectionsQuery();
  const cooldowns = useCooldownsQuery();
  const rateLimits = useRateLimitsQuery();
  const del = useDeleteCombo();
  const [editing, setEditing] = useState<Editing>(null);
  const [notice, setNotice] = useState<Notice | null>(null);

  const live = useMemo(
    () => ({
      cooldowns: cooldowns.data ? new Map(cooldowns.data.map((c) => [c.connection, c])) : undefined,
      flows: rateLimits.data ? new Map(rateLimits.data.connections.map((f) => [f.connectionId, f])) : undefined,
    }),
    [cooldowns.data, rateLimits.data],
  );
  const list = useMemo(
    () => [...(combos.data ?? [])].sort((a, b) => a.name.localeCompare(b.name)),
    [combos.data],
  );
  const editingCombo = editing?.mode === "edit" ? list.find((c) => c.name === editing.name) : undefined;

  const remove = (c: Versioned<ComboView>) =>
    del
      .mutateAsync({ name: c.name, expectedVersion: c.version })
      .then(() => {
        setNotice({ tone: "ok", text: `Deleted ${c.name}.` });
        if (editing?.mode === "edit" && editing.name === c.name) setEditing(null);
      })
      .catch((e: Error) => setNotice(deleteFailure(c, e)));

  const reloadList = () => {
    setNotice(null);
    void combos.refetch().then((r) => {
      if (r.isSuccess) setNotice({ tone: "ok", text: "Reloaded the combos. Nothing was deleted." });
    });
  };

  const done = (saved: Versioned<ComboView>, created: boolean) => {
    setEditing(null);
    setNotice({ tone: "ok", text: `${created ? "Created" : "Saved"} ${saved.name}.` });
  };

  return (
    <div className="page">
      <header className="page-header page-header-row">
        <div>
          <h1>Combos</h1>
          <p className="page-lead">
            Names your agents send as the model that route over several targets, in the order a strategy picks.
          </p>
        </div>
        {editing === null && combos.isSuccess && (
          <button type="button" className="btn btn-primary" onClick={() => setEditing({ mode: "add" })}>
            New combo
          </button>
        )}
      </header>
      <p className={`notice${notice ? ` notice-${notice.tone}` : ""}`} role="status">
        {notice?.text}
        {notice?.reload && (
          <>
            {" "}
            <button type="button" className="btn btn-small" onClick={reloadList}>
              Reload combos
            </button>
          </>
        )}
      </p>
      {connections.isError && (
        <p className="inline-error" role="alert">
          Connections are unavailable, so targets cannot be resolved: {connections.error.message}
        </p>
      )}
      {(cooldowns.isError || rateLimits.isError) && (
        <p className="inline-error" role="alert">
          Live state is unavailable: {(cooldowns.error ?? rateLimits.error)?.message}
        </p>
      )}
      {editing !== null && combos.isSuccess && (editing.mode === "add" || editingCombo) && (
        <ComboForm
          key={editingCombo?.name ?? "new"}
          combo={editingCombo}
          combos={list}
          connections={connections.data ?? []}
          onCancel={() => setEditing(null)}
          onDone={done}
        />
      )}
      {combos.isPending ? (
        <Loading label="Loading combos…" />
      ) : combos.isError ? (
        <ErrorState title="Could not load combos" error={combos.error} onRetry={() => void combos.refetch()} />
      ) : list.length === 0 ? (
        <EmptyState title="No combos yet">
          A combo is a name such as <code>coding</code> that your agents send as the model. It routes over its
          targets — provider/model pairs, catalogue models or other combos, each optionally pinned to one connection —
          as a fallback chain, round robin, weighted draw, least used and more. Each combo appears here with its
          targets and, live, the connections they run on: status, cooldowns, requests in flight and queued.
        </EmptyState>
      ) : (
        <div className="card-grid">
          {list.map((c) => (
            <ComboCard
              key={c.name}
              combo={c}
              combos={list}
              connections={connections.data}
              live={live}
              onEdit={() => {
                setNotice(null);
                setEditing({ mode: "edit", name: c.name });
              }}
              onDelete={() => remove(c)}
            />
          ))}
        </div>
      )}
    </div>
  );
}

// Cooldown Manager: every connection taken out of routing, whatever the reason (a
// cooldown, model lockouts, a terminal state, its provider's open breaker, routing
// paused), each with the derived status every page shows; filter by provider, clear
// one / a selection / all, and the cooldown settings. A connection the user switched
// off is not "out of rotation" (as for the gateway's count and the tray).
import { useMemo, useState } from "react";
import type { ConnectionCooldownView, ConnectionView, CooldownsClearRequest, CooldownsClearResult } from "../../ipc/bindings";
import { SelectField } from "../../shared/fields";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import {
  useClearCooldowns,
  useConnectionsQuery,
  useCooldownsQuery,
  useRanges,
  useResilienceDefaultsQuery,
  useResilienceQuery,
} from "./api";
import { CooldownSettingsCard } from "./components/CooldownSettingsCard";
import { CooldownTable, isClearable, type OutOfRoutingRow } from "./components/CooldownTable";

/**
 * The connections out of routing: every one whose derived status is not routable
 * (but not switched off), and every one with a cooldown, a terminal state or model
 * lockouts (in the list's order; cooldown rows of connections the list does not have
 * come last).
 */
export function outOfRoutingRows(
  connections: ConnectionView[] | undefined,
  cooldowns: ConnectionCooldownView[],
): OutOfRoutingRow[] {
  const byId = new Map(cooldowns.map((c) => [c.connection, c]));
  const cooling = (cd: ConnectionCooldownView | undefined) =>
    cd !== undefined && (cd.status !== "active" || cd.lockouts.length > 0);
  const rows: OutOfRoutingRow[] = (connections ?? [])
    .map((c) => ({ id: c.id, provider: c.provider, name: c.name, status: c.status, cooldown: byId.get(c.id) }))
    .filter((r) => (!r.status.routable && r.status.state !== "disabled") || cooling(r.cooldown));
  const known = new Set((connections ?? []).map((c) => c.id));
  for (const cd of cooldowns) {
    if (!known.has(cd.connection) && cooling(cd)) {
      rows.push({ id: cd.connection, provider: cd.provider, name: undefined, status: undefined, cooldown: cd });
    }
  }
  return rows;
}

export function describeClear(r: CooldownsClearResult): string {
  return `Cleared ${r.cleared}, unchanged ${r.unchanged}, skipped terminal ${r.skippedTerminal}, lockouts cleared ${r.lockoutsCleared}.`;
}

export function CooldownsPage() {
  const cooldowns = useCooldownsQuery();
  const connections = useConnectionsQuery();
  const settings = useResilienceQuery();
  const defaults = useResilienceDefaultsQuery();
  const ranges = useRanges();
  const clear = useClearCooldowns();
  const [provider, setProvider] = useState("");
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [message, setMessage] = useState<{ tone: "ok" | "error"; text: string } | null>(null);

  const outOfRouting = useMemo(
    () => outOfRoutingRows(connections.data, cooldowns.data ?? []),
    [connections.data, cooldowns.data],
  );
  const providers = useMemo(
    () =>
      [...new Set([...(cooldowns.data ?? []), ...(connections.data ?? [])].map((r) => r.provider))].sort(),
    [cooldowns.data, connections.data],
  );
  const rows = provider ? outOfRouting.filter((r) => r.provider === provider) : outOfRouting;
  const clearable = rows.filter(isClearable);
  const selectedVisible = clearable.filter((r) => selected.has(r.id)).map((r) => r.id);

  const run = (request: CooldownsClearRequest) => {
    setMessage(null);
    clear.mutate(request, {
      onSuccess: (r) => {
        setMessage({ tone: "ok", text: describeClear(r) });
        setSelected((s) => {
          const next = new Set(s);
          for (const id of request.connectionIds ?? []) next.delete(id);
          if (request.all) next.clear();
          return next;
        });
      },
      onError: (e) => setMessage({ tone: "error", text: `Clear failed: ${e.message}` }),
    });
  };

  const toggle = (id: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return (
    <div className="page">
      <header className="page-header">
        <h1>Cooldown Manager</h1>
        <p className="page-lead">
          Every connection that requests do not reach now, and why: cooling down, models locked out, a terminal
          state, its provider’s breaker open. Clearing a cooldown puts a connection back into rotation at once.
        </p>
      </header>
      <div className="card-grid">
        <section className="card card-wide" aria-labelledby="cooldowns-title">
          <header className="card-header">
            <h2 id="cooldowns-title">Out of routing (live)</h2>
          </header>
          <p className={`notice${message ? ` notice-${message.tone}` : ""}`} role="status">
            {message?.text}
          </p>
          {connections.isError && (
            <p className="inline-error" role="alert">
              Connection statuses are unavailable ({connections.error.message}): only cooldowns are listed.
            </p>
          )}
          {cooldowns.isPending || connections.isPending ? (
            <Loading label="Loading cooldowns…" />
          ) : cooldowns.isError ? (
            <ErrorState title="Could not load cooldowns" error={cooldowns.error} onRetry={() => void cooldowns.refetch()} />
          ) : (
            <>
              <div className="toolbar">
                <SelectField
                  id="cooldown-provider"
                  label="Provider"
                  value={provider}
                  onChange={(v) => setProvider(v)}
                  options={[{ value: "", label: "All providers" }, ...providers.map((p) => ({ value: p, label: p }))]}
                />
                <div className="toolbar-actions">
                  <button
                    type="button"
                    className="btn"
                    disabled={clear.isPending || selectedVisible.length === 0}
                    onClick={() => run({ connectionIds: selectedVisible, all: false, provider: null })}
                  >
                    Clear selected{selectedVisible.length ? ` (${selectedVisible.length})` : ""}
                  </button>
                  <button
                    type="button"
                    className="btn btn-primary"
                    disabled={clear.isPending || clearable.length === 0}
                    onClick={() => run({ connectionIds: [], all: true, provider: provider || null })}
                  >
                    {provider ? `Clear all of ${provider}` : "Clear all"}
                  </button>
                </div>
              </div>
              {rows.length === 0 ? (
                <EmptyState
                  title={
                    provider
                      ? `Nothing out of routing for ${provider}`
                      : connections.isError
                        ? "No connection is cooling down"
                        : "Every connection is in rotation"
                  }
                >
                  A connection appears here when it is cooling down after a rate limit or failure, when one of its
                  models is locked out, when its provider’s breaker is open, when routing is paused, or when it is in
                  a terminal state (banned, expired, credits exhausted).
                </EmptyState>
              ) : (
                <CooldownTable
                  rows={rows}
                  selected={selected}
                  onToggle={toggle}
                  onClear={(id) => run({ connectionIds: [id], all: false, provider: null })}
                  busy={clear.isPending}
                />
              )}
            </>
          )}
        </section>
        {settings.isPending ? (
          <Loading label="Loading cooldown settings…" />
        ) : settings.isError ? (
          <ErrorState
            title="Could not load cooldown settings"
            error={settings.error}
            onRetry={() => void settings.refetch()}
          />
        ) : (
          <CooldownSettingsCard settings={settings.data} defaults={defaults.data} ranges={ranges} />
        )}
      </div>
    </div>
  );
}

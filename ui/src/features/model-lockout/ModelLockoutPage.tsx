// Model Lockout: the settings card and the active lockouts with per-row re-enable.
import { useState } from "react";
import type { ModelLockoutView } from "../../ipc/bindings";
import { EmptyState, ErrorState, Loading } from "../../shared/states";
import {
  useClearLockout,
  useLockoutsQuery,
  useModelLockoutQuery,
  useRanges,
  useResilienceDefaultsQuery,
} from "./api";
import { LockoutSettingsCard } from "./components/LockoutSettingsCard";
import { lockoutKey, LockoutsTable } from "./components/LockoutsTable";

export function ModelLockoutPage() {
  const settings = useModelLockoutQuery();
  const defaults = useResilienceDefaultsQuery();
  const lockouts = useLockoutsQuery();
  const ranges = useRanges();
  const clear = useClearLockout();
  const [message, setMessage] = useState<string | null>(null);

  const reEnable = (l: ModelLockoutView) => {
    setMessage(null);
    clear.mutate(
      { provider: l.provider, connection: l.connection, model: l.model },
      {
        onSuccess: (r) =>
          setMessage(
            r.cleared > 0
              ? `Re-enabled ${l.model} on ${l.connection}.`
              : `${l.model} on ${l.connection} was no longer locked.`,
          ),
        onError: (e) => setMessage(`Could not re-enable ${l.model} on ${l.connection}: ${e.message}`),
      },
    );
  };

  return (
    <div className="page">
      <header className="page-header">
        <h1>Model Lockout</h1>
        <p className="page-lead">
          Takes one failing model out of routing on one connection, without cooling the whole account.
        </p>
      </header>
      <div className="card-grid">
        {settings.isPending ? (
          <Loading label="Loading model lockout settings…" />
        ) : settings.isError ? (
          <ErrorState
            title="Could not load model lockout settings"
            error={settings.error}
            onRetry={() => void settings.refetch()}
          />
        ) : (
          <LockoutSettingsCard settings={settings.data} defaults={defaults.data?.modelLockout} ranges={ranges} />
        )}
        <section className="card card-wide" aria-labelledby="lockouts-title">
          <header className="card-header">
            <h2 id="lockouts-title">Active lockouts (live)</h2>
          </header>
          <p className="card-status" role="status">
            {message}
          </p>
          {lockouts.isPending ? (
            <Loading label="Loading active lockouts…" />
          ) : lockouts.isError ? (
            <ErrorState
              title="Could not load active lockouts"
              error={lockouts.error}
              onRetry={() => void lockouts.refetch()}
            />
          ) : lockouts.data.length === 0 ? (
            <EmptyState title="No active model lockouts">
              When a model fails on a connection with one of the configured error codes, it is locked there and
              listed here with its reason and a countdown to when it is re-enabled.
              {settings.data && !settings.data.enabled ? " Model lockout is currently off, so none are created." : ""}
            </EmptyState>
          ) : (
            <LockoutsTable
              lockouts={lockouts.data}
              busyKey={clear.isPending && clear.variables ? lockoutKey({ ...clear.variables, connection: clear.variables.connection ?? "" }) : null}
              onReEnable={reEnable}
            />
          )}
        </section>
      </div>
    </div>
  );
}

// Base URL (with copy), version, listen address, and routing pause / resume.
import type { GatewayStatusView } from "../../../ipc/bindings";
import { CopyButton } from "../../../shared/CopyButton";
import { useSetPaused } from "../api";

export function PausedBanner({ status }: { status: GatewayStatusView }) {
  const setPaused = useSetPaused();
  if (!status.paused) return null;
  return (
    <div className="banner banner-warning" role="region" aria-label="Routing paused">
      <div>
        <strong>Routing is paused.</strong> Agents get an error for every request until you resume.
      </div>
      <button
        type="button"
        className="btn btn-primary"
        disabled={setPaused.isPending}
        onClick={() => setPaused.mutate(false)}
      >
        Resume routing
      </button>
    </div>
  );
}

export function GatewayCard({ status }: { status: GatewayStatusView }) {
  const setPaused = useSetPaused();
  return (
    <section className="card" aria-labelledby="gateway-title">
      <header className="card-header">
        <h2 id="gateway-title">Gateway</h2>
        <span className={`badge ${status.paused ? "badge-warning" : "badge-ok"}`}>
          {status.paused ? "Routing paused" : "Routing"}
        </span>
      </header>
      <dl className="kv">
        <dt>Base URL</dt>
        <dd className="kv-with-action">
          <code data-testid="base-url">{status.baseUrl}</code>
          <CopyButton text={status.baseUrl} label="Copy base URL" />
        </dd>
        <dt>Listening on</dt>
        <dd>
          <code>{status.listen}</code>
        </dd>
        <dt>Client keys</dt>
        <dd>{status.clientKeyRequired ? "Required for every agent request" : "Optional on loopback"}</dd>
        <dt>Version</dt>
        <dd>{status.version}</dd>
      </dl>
      <div className="card-actions">
        {status.paused ? (
          <button
            type="button"
            className="btn btn-primary"
            disabled={setPaused.isPending}
            onClick={() => setPaused.mutate(false)}
          >
            Resume routing
          </button>
        ) : (
          <button type="button" className="btn" disabled={setPaused.isPending} onClick={() => setPaused.mutate(true)}>
            Pause routing
          </button>
        )}
        {setPaused.error ? (
          <span className="inline-error" role="alert">
            {setPaused.error.message}
          </span>
        ) : null}
      </div>
    </section>
  );
}

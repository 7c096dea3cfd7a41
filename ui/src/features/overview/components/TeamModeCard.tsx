// Team mode in words: several gateway replicas share one Postgres, and a replica
// that loses it keeps routing on its last known state until it returns (then it
// resynchronises). With SQLite (this machine's file) nothing here is shown: the
// state is local and there is no other replica to fall behind.
import type { HealthView } from "../../../ipc/bindings";
import { useHealthQuery } from "../api";

const isTeamMode = (health: HealthView) => health.databaseBackend === "postgres";
const isDatabaseUnavailable = (health: HealthView) => health.database === "unavailable";

/** What a replica without its database still does, and what it misses meanwhile. */
function DatabaseUnavailableText() {
  return (
    <>
      <strong>Database unavailable</strong> — routing on the last known state; changes made on other replicas arrive
      when it returns.
    </>
  );
}

/**
 * A warning above the cards while the shared database is lost: this replica's view
 * may be stale, which matters before trusting anything else on the page.
 */
export function DatabaseUnavailableBanner() {
  const health = useHealthQuery();
  if (!health.data || !isDatabaseUnavailable(health.data)) return null;
  return (
    <div className="banner banner-warning" role="alert" aria-label="Database unavailable">
      <div>
        <DatabaseUnavailableText />
      </div>
    </div>
  );
}

export function TeamMode({ health }: { health: HealthView }) {
  return (
    <>
      <p className="health-line" aria-label="Team mode">
        <strong>Team mode</strong> — shared Postgres
        {health.replica !== null && (
          <>
            , replica <code>{health.replica}</code>
          </>
        )}
      </p>
      <p aria-label="Database state">
        {isDatabaseUnavailable(health) ? <DatabaseUnavailableText /> : <>Database: connected</>}
      </p>
    </>
  );
}

/**
 * Shown in team mode only. Loading and errors of the health document are the
 * Connections card's to show (same query), so this card waits silently.
 */
export function TeamModeCard() {
  const health = useHealthQuery();
  if (!health.data || !isTeamMode(health.data)) return null;
  const unavailable = isDatabaseUnavailable(health.data);
  return (
    <section className="card" aria-labelledby="team-mode-title">
      <header className="card-header">
        <h2 id="team-mode-title">Database</h2>
        <span className={`badge ${unavailable ? "badge-warning" : "badge-ok"}`}>
          {unavailable ? "Unavailable" : "Connected"}
        </span>
      </header>
      <TeamMode health={health.data} />
    </section>
  );
}

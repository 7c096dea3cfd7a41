// Overview: gateway base URL and pause state, team mode and its shared database,
// connections in and out of rotation, client keys, agent setup, activity.
import { useState } from "react";
import { useApi } from "../../api/ApiProvider";
import { hrefFor } from "../../router";
import { ErrorState, Loading } from "../../shared/states";
import { useGatewayQuery } from "./api";
import { ActivityCard } from "./components/ActivityCard";
import { ClientKeysCard, type CreatedKey } from "./components/ClientKeysCard";
import { ConnectionsHealthCard } from "./components/ConnectionsHealthCard";
import { GatewayCard, PausedBanner } from "./components/GatewayCard";
import { SetupCard } from "./components/SetupCard";
import { DatabaseUnavailableBanner, TeamModeCard } from "./components/TeamModeCard";

/** The desktop app's preferences have their own page (it works without the gateway). */
function DesktopLink() {
  return (
    <section className="card" aria-labelledby="desktop-title">
      <header className="card-header">
        <h2 id="desktop-title">Desktop app</h2>
      </header>
      <p className="card-description">
        Port, launch at login, start hidden and theme are in <a href={hrefFor("preferences")}>Preferences</a>.
      </p>
    </section>
  );
}

export function OverviewPage() {
  const api = useApi();
  const gateway = useGatewayQuery();
  const [created, setCreated] = useState<CreatedKey | null>(null);

  return (
    <div className="page">
      <header className="page-header">
        <h1>Overview</h1>
        <p className="page-lead">Point your agents at the gateway and watch how their traffic is doing.</p>
      </header>
      {gateway.isPending ? (
        <Loading label="Loading gateway status…" />
      ) : gateway.isError ? (
        <ErrorState
          title="Could not load the gateway status"
          error={gateway.error}
          onRetry={() => void gateway.refetch()}
        />
      ) : (
        <>
          <PausedBanner status={gateway.data} />
          <DatabaseUnavailableBanner />
          <div className="card-grid">
            <GatewayCard status={gateway.data} />
            <TeamModeCard />
            <ConnectionsHealthCard />
            <ActivityCard />
            <ClientKeysCard created={created} onCreated={setCreated} onDismiss={() => setCreated(null)} />
            <SetupCard baseUrl={gateway.data.baseUrl} secret={created?.secret ?? null} />
            {api.desktopPrefsGet ? <DesktopLink /> : null}
          </div>
        </>
      )}
    </div>
  );
}

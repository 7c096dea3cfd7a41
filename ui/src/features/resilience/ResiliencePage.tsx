// Resilience: one validated card per settings group (ranges shown, save, reset to
// defaults), the operator error rules and the live provider breakers.
import { ErrorState, Loading } from "../../shared/states";
import { SettingsCard } from "../../shared/SettingsCard";
import {
  usePatchResilience,
  useRanges,
  useReloadResilience,
  useResilienceDefaultsQuery,
  useResilienceQuery,
} from "./api";
import { BreakersCard } from "./components/BreakersCard";
import { ErrorRulesCard } from "./components/ErrorRulesCard";
import { GROUPS } from "./groups";

export function ResiliencePage() {
  const settings = useResilienceQuery();
  const defaults = useResilienceDefaultsQuery();
  const ranges = useRanges();
  const patch = usePatchResilience();
  const reload = useReloadResilience();
  const save = (groups: Record<string, unknown>, expectedVersion: number) =>
    patch.mutateAsync({ groups, expectedVersion });

  return (
    <div className="page">
      <header className="page-header">
        <h1>Resilience</h1>
        <p className="page-lead">
          How the gateway reacts to failing providers, accounts and streams. Every value is checked by the gateway
          against the range shown under it.
        </p>
      </header>
      <div className="card-grid">
        <BreakersCard />
        {settings.isPending ? (
          <Loading label="Loading resilience settings…" />
        ) : settings.isError ? (
          <ErrorState
            title="Could not load resilience settings"
            error={settings.error}
            onRetry={() => void settings.refetch()}
          />
        ) : (
          <>
            {GROUPS.map((g) => (
              <SettingsCard
                key={g.key}
                id={`res-${g.key}`}
                title={g.title}
                description={g.description}
                sections={g.sections}
                doc={settings.data}
                version={settings.data.version}
                defaults={defaults.data}
                ranges={ranges}
                onSave={save}
                onReload={async () => {
                  const fresh = await reload();
                  return { doc: fresh, version: fresh.version };
                }}
              />
            ))}
            <ErrorRulesCard
              settings={settings.data}
              defaults={defaults.data}
              ranges={ranges}
              onSave={save}
              onReload={reload}
            />
          </>
        )}
      </div>
    </div>
  );
}

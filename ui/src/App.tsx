// The app shell: sidebar navigation, top banners (gateway not running, live updates
// degraded), and the page outlet of the hash router.
import { useEffect, useRef } from "react";
import { useApi, useLiveMode } from "./api/ApiProvider";
import { useGatewayQuery } from "./api/sharedQueries";
import { CombosPage } from "./features/combos/CombosPage";
import { ConnectionsPage } from "./features/connections/ConnectionsPage";
import { CooldownsPage } from "./features/cooldowns/CooldownsPage";
import { LeasesPage } from "./features/leases/LeasesPage";
import { ModelLockoutPage } from "./features/model-lockout/ModelLockoutPage";
import { OverviewPage } from "./features/overview/OverviewPage";
import { RequestsPage } from "./features/requests/RequestsPage";
import { useDesktopPrefsQuery, useDesktopStatusQuery } from "./features/preferences/api";
import { PreferencesPage } from "./features/preferences/PreferencesPage";
import { ResiliencePage } from "./features/resilience/ResiliencePage";
import { askToLeave, hrefFor, ROUTES, useRoute, type RouteId } from "./router";
import { useDesktopWindow } from "./shared/desktopWindow";
import { hasUnsavedChanges } from "./shared/unsavedChanges";
import { SelectField } from "./shared/fields";
import { applyTheme, THEME_OPTIONS, useStoredTheme, type Theme } from "./theme";

const PAGES: Record<RouteId, () => React.JSX.Element> = {
  overview: OverviewPage,
  connections: ConnectionsPage,
  requests: RequestsPage,
  combos: CombosPage,
  resilience: ResiliencePage,
  "model-lockout": ModelLockoutPage,
  cooldowns: CooldownsPage,
  leases: LeasesPage,
  preferences: PreferencesPage,
};

/** Desktop only: the hosted gateway did not start; its port is chosen in Preferences. */
function GatewayBanner({ onPreferences }: { onPreferences: boolean }) {
  const status = useDesktopStatusQuery();
  if (!status.data || status.data.running) return null;
  return (
    <div className="banner banner-danger" role="alert">
      <span>
        <strong>Gateway not running</strong>
        {status.data.error ? `: ${status.data.error}` : "."}
      </span>
      {!onPreferences && (
        <a className="btn btn-small" href={hrefFor("preferences")}>
          Open Preferences
        </a>
      )}
    </div>
  );
}

function ThemeControl() {
  const api = useApi();
  const prefs = useDesktopPrefsQuery();
  const [stored, setStored] = useStoredTheme();
  const desktop = api.desktopPrefsGet !== undefined;
  const theme: Theme = desktop ? (prefs.data?.theme ?? "system") : stored;
  useEffect(() => applyTheme(theme), [theme]);
  if (desktop) return null; // The desktop app sets its theme in Preferences.
  return (
    <SelectField<Theme>
      id="theme-select"
      label="Theme"
      value={stored}
      onChange={setStored}
      options={THEME_OPTIONS}
    />
  );
}

export function App() {
  const route = useRoute();
  const liveMode = useLiveMode();
  const gateway = useGatewayQuery();
  const mainRef = useRef<HTMLElement>(null);
  const firstRender = useRef(true);
  const api = useApi();
  const Page = PAGES[route];
  const desktop = api.desktopPrefsGet !== undefined;
  const routes = ROUTES.filter((r) => desktop || !("desktopOnly" in r));
  useDesktopWindow();

  useEffect(() => {
    const label = ROUTES.find((r) => r.id === route)?.label ?? "";
    document.title = `${label} · Switchyard`;
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    mainRef.current?.focus();
  }, [route]);

  return (
    <div className="app">
      <a className="skip-link" href="#main" onClick={(e) => {
        e.preventDefault();
        mainRef.current?.focus();
      }}>
        Skip to content
      </a>
      <aside className="sidebar">
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            ⇄
          </span>
          <span>Switchyard</span>
        </div>
        <nav aria-label="Pages">
          <ul>
            {routes.map((r) => (
              <li key={r.id}>
                <a
                  href={hrefFor(r.id)}
                  aria-current={route === r.id ? "page" : undefined}
                  onClick={(e) => {
                    // Asked here, the link adds no history entry when the user stays (a
                    // link opened in another tab or window leaves nothing).
                    const elsewhere = e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey;
                    if (!elsewhere && r.id !== route && hasUnsavedChanges() && !askToLeave()) e.preventDefault();
                  }}
                >
                  {r.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="sidebar-footer">
          {gateway.data?.paused && <span className="badge badge-warning">Routing paused</span>}
          {gateway.data && <span className="muted small">v{gateway.data.version}</span>}
          <ThemeControl />
        </div>
      </aside>
      <div className="content">
        <GatewayBanner onPreferences={route === "preferences"} />
        {liveMode === "polling" && (
          <div className="banner banner-info" role="status">
            Live updates are unavailable; refreshing every 5 seconds.
          </div>
        )}
        <main id="main" ref={mainRef} tabIndex={-1}>
          <Page />
        </main>
      </div>
    </div>
  );
}

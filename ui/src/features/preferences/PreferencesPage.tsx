// Preferences: the desktop app's own settings (port, launch at login, start hidden,
// theme). Desktop IPC only, so the page works when the gateway failed to start (its
// port taken, say) — the "Gateway not running" banner links here.
import { useApi } from "../../api/ApiProvider";
import { EmptyState } from "../../shared/states";
import { DesktopPrefsCard } from "./components/DesktopPrefsCard";

export function PreferencesPage() {
  const api = useApi();
  return (
    <div className="page">
      <header className="page-header">
        <h1>Preferences</h1>
        <p className="page-lead">The desktop app’s own settings. They can be changed even while the gateway is not running.</p>
      </header>
      {api.desktopPrefsGet ? (
        <div className="card-grid">
          <DesktopPrefsCard />
        </div>
      ) : (
        <EmptyState title="Preferences belong to the desktop app">
          In the browser, the theme is chosen in the sidebar; the gateway’s own settings are on the Resilience, Model
          Lockout and Cooldown Manager pages.
        </EmptyState>
      )}
    </div>
  );
}

// Desktop-only preferences (tauri-plugin-store): port, launch at login, start hidden,
// theme. Rendered only inside the desktop app; needs only desktop commands, so it works
// while the gateway is not running. Beside the port: the port in force, when it is not
// the saved one or comes from SWITCHYARD_PORT.
import { useState, type FormEvent } from "react";
import type { DesktopPrefs, DesktopStatusView, Theme } from "../../../ipc/bindings";
import { FormErrors, NumberField, SelectField, Switch } from "../../../shared/fields";
import { ErrorState, Loading } from "../../../shared/states";
import { useFieldErrors } from "../../../shared/useFieldErrors";
import { THEME_OPTIONS } from "../../../theme";
import { useDesktopPrefsQuery, useDesktopStatusQuery, useSaveDesktopPrefs } from "../api";

const PREF_FIELDS = ["/port", "/launchAtLogin", "/startHidden", "/theme"] as const;

/**
 * The port in force, when the saved preference is not the whole story: "Running on
 * 7821 (from SWITCHYARD_PORT, which overrides this setting)"; null otherwise.
 */
export function portInForce(status: DesktopStatusView | undefined, saved: number): string | null {
  if (!status || status.port === null) return null;
  const fromEnv = status.portSource === "SWITCHYARD_PORT";
  if (!fromEnv && status.port === saved) return null;
  const how = status.running ? "Running on" : "Tried to start on";
  const why = fromEnv ? "from SWITCHYARD_PORT, which overrides this setting" : "the saved port applies at the next start";
  return `${how} ${status.port} (${why}).`;
}

export function DesktopPrefsCard() {
  const prefs = useDesktopPrefsQuery();
  return (
    <section className="card" aria-labelledby="desktop-title">
      <header className="card-header">
        <h2 id="desktop-title">Desktop app</h2>
      </header>
      {prefs.isPending ? (
        <Loading label="Loading preferences…" />
      ) : prefs.isError ? (
        <ErrorState title="Could not load preferences" error={prefs.error} onRetry={() => void prefs.refetch()} />
      ) : (
        <DesktopPrefsForm prefs={prefs.data} />
      )}
    </section>
  );
}

function DesktopPrefsForm({ prefs }: { prefs: DesktopPrefs }) {
  const save = useSaveDesktopPrefs();
  const status = useDesktopStatusQuery();
  const inForce = portInForce(status.data, prefs.port);
  const [port, setPort] = useState(String(prefs.port));
  const [launchAtLogin, setLaunchAtLogin] = useState(prefs.launchAtLogin);
  const [startHidden, setStartHidden] = useState(prefs.startHidden);
  const [theme, setTheme] = useState<Theme>(prefs.theme);
  const [saved, setSaved] = useState(false);
  const errors = useFieldErrors(PREF_FIELDS);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    if (!/^\d+$/.test(port.trim())) {
      errors.setClientErrors({ "/port": "Enter a port number." });
      return;
    }
    try {
      await save.mutateAsync({ port: Number(port.trim()), launchAtLogin, startHidden, theme });
      errors.clear();
      setSaved(true);
    } catch (err) {
      errors.setError(err);
    }
  };

  return (
    <form noValidate onSubmit={submit}>
      <div className="field-grid">
        <NumberField
          id="pref-port"
          label="Port"
          path="/port"
          value={port}
          onChange={setPort}
          range={{ path: "/port", kind: "integer", min: 1024, max: 65535, unit: null, allowed: [] }}
          help={
            <>
              The gateway's port on 127.0.0.1; applies at the next start, and agents' base URL changes with it.
              {inForce && (
                <>
                  {" "}
                  <strong className="port-in-force">{inForce}</strong>
                </>
              )}
            </>
          }
          error={errors.fieldError("/port")}
        />
        <SelectField<Theme>
          id="pref-theme"
          label="Theme"
          path="/theme"
          value={theme}
          onChange={setTheme}
          options={THEME_OPTIONS}
          error={errors.fieldError("/theme")}
        />
        <Switch
          id="pref-launch"
          label="Launch at login"
          path="/launchAtLogin"
          checked={launchAtLogin}
          onChange={setLaunchAtLogin}
          error={errors.fieldError("/launchAtLogin")}
        />
        <Switch
          id="pref-hidden"
          label="Start hidden in the tray"
          path="/startHidden"
          checked={startHidden}
          onChange={setStartHidden}
          error={errors.fieldError("/startHidden")}
        />
      </div>
      <FormErrors error={errors.error} issues={errors.formIssues} />
      <div className="card-actions">
        <button type="submit" className="btn btn-primary" disabled={save.isPending}>
          Save <span className="sr-only">desktop preferences</span>
        </button>
        <span className="card-status" role="status">
          {saved ? "Saved." : null}
        </span>
      </div>
    </form>
  );
}

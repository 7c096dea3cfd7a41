// An account's usage windows (Claude's 5-hour and 7-day, Codex's primary and
// secondary), read by the gateway from the upstream's latest answer: compact on the
// connection row ("5h 87% · resets in 2h 03m"), as bars in the connection form.
// Nothing is shown for a connection without a reading.
import type { UsageView, UsageWindowView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { Countdown } from "../../../shared/Countdown";
import { formatInstant, humanize } from "../../../shared/format";

/** A window's name: its length when known (300 min → "5h", 10080 → "7d"), else the upstream's name. */
export function windowName(w: UsageWindowView): string {
  const m = w.windowMinutes;
  if (m === null || m <= 0) return w.window;
  if (m % 1440 === 0) return `${m / 1440}d`;
  if (m % 60 === 0) return `${m / 60}h`;
  return `${m}m`;
}

/** The share used, in whole percent for the row ("87%"), or with one decimal for the bars ("87.3%"). */
export function usedPercent(permille: number, precise = false): string {
  return precise ? `${(permille / 10).toFixed(1).replace(/\.0$/, "")}%` : `${Math.round(permille / 10)}%`;
}

function tone(w: UsageWindowView): "danger" | "warning" | "ok" {
  if (w.usedPermille >= 1000 || w.status === "rejected") return "danger";
  if (w.usedPermille >= 750 || w.status === "allowed_warning") return "warning";
  return "ok";
}

function Resets({ at }: { at: number | null }) {
  if (at === null) return null;
  return (
    <span className="muted">
      {" "}
      · resets in <Countdown expiresAt={at} expiredLabel="now" />
    </span>
  );
}

/** The row's compact form: one line per window. */
export function UsageSummary({ usage }: { usage: UsageView | null }) {
  if (usage === null || usage.windows.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="plain-list usage-summary small" aria-label="Usage windows">
      {usage.windows.map((w) => (
        <li key={w.window}>
          <span className={`usage-${tone(w)}`}>
            {windowName(w)} {usedPercent(w.usedPermille)}
          </span>
          <Resets at={w.resetsAt} />
        </li>
      ))}
    </ul>
  );
}

/** The form's detailed form: a bar per window with its percentage and reset time. */
export function UsageBars({ usage }: { usage: UsageView | null }) {
  return (
    <div className="live-state" role="group" aria-label="Usage windows">
      <h4>Usage windows (live)</h4>
      {usage === null || usage.windows.length === 0 ? (
        <p className="muted">No usage reading yet: the windows appear after this account’s next answer.</p>
      ) : (
        <>
          <ul className="plain-list usage-bars">
            {usage.windows.map((w) => {
              const name = windowName(w);
              const pct = Math.min(100, w.usedPermille / 10);
              return (
                <li key={w.window}>
                  <div className="usage-bar-head">
                    <strong>{name}</strong>
                    <span>{usedPercent(w.usedPermille, true)} used</span>
                    {usage.bindingWindow === w.window && <span className="badge badge-info">Binding</span>}
                  </div>
                  <div
                    className="usage-bar"
                    role="meter"
                    aria-label={`${name} window used`}
                    aria-valuemin={0}
                    aria-valuemax={100}
                    aria-valuenow={Math.round(pct * 10) / 10}
                    aria-valuetext={usedPercent(w.usedPermille, true)}
                  >
                    <span className={`usage-bar-fill usage-fill-${tone(w)}`} style={{ width: `${pct}%` }} />
                  </div>
                  <div className="small muted">
                    {w.resetsAt === null ? (
                      "Reset time not announced"
                    ) : (
                      <>
                        Resets in <Countdown expiresAt={w.resetsAt} expiredLabel="now" /> ({formatInstant(w.resetsAt)})
                      </>
                    )}
                    {w.status ? ` · ${humanize(w.status)}` : ""}
                  </div>
                </li>
              );
            })}
          </ul>
          <p className="small muted">
            {usage.status ? `Account status: ${humanize(usage.status)}. ` : ""}
            Read from the upstream’s answer <Ago at={usage.observedAt} />.
          </p>
        </>
      )}
    </div>
  );
}

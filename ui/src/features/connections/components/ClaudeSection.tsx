// The Claude section of a Claude OAuth connection: the two usage-wall options, the
// organization UUID, and (when editing) the account's usage windows and the live
// lane and limit-reset state.
import type { ClaudeWallView, UsageView } from "../../../ipc/bindings";
import { Countdown } from "../../../shared/Countdown";
import { Switch, TextField } from "../../../shared/fields";
import { formatInstant, humanize } from "../../../shared/format";
import { useNow } from "../../../shared/useNow";
import { UsageBars } from "./Usage";

export function ClaudeSection({
  lowPriorityMode,
  autoLimitReset,
  organizationUUID,
  onChange,
  fieldError,
  wall,
  usage,
}: {
  lowPriorityMode: boolean;
  autoLimitReset: boolean;
  organizationUUID: string;
  onChange: (change: Partial<{ lowPriorityMode: boolean; autoLimitReset: boolean; organizationUUID: string }>) => void;
  fieldError: (path: string) => string | undefined;
  /** Live state; undefined while adding a connection. */
  wall?: ClaudeWallView | null;
  /** The account's usage windows; undefined while adding a connection. */
  usage?: UsageView | null;
}) {
  return (
    <section className="subsection" aria-label="Claude options">
      <h3>Claude</h3>
      <p className="field-help">
        Both options are off by default and mirror Claude Code’s <code>/low-priority</code> and{" "}
        <code>/limit-reset</code> commands. They act only when this account hits its 5-hour usage wall.
      </p>
      <div className="field-grid">
        <Switch
          id="conn-low-priority"
          label="Low-priority lane (lowPriorityMode)"
          path="/providerSpecific/lowPriorityMode"
          checked={lowPriorityMode}
          onChange={(v) => onChange({ lowPriorityMode: v })}
          help="At the wall, accept the slow lane and keep using this account (until the announced reset + 60 s) instead of cooling it down."
          error={fieldError("/providerSpecific/lowPriorityMode")}
        />
        <Switch
          id="conn-auto-reset"
          label="Automatic limit reset (autoLimitReset)"
          path="/providerSpecific/autoLimitReset"
          checked={autoLimitReset}
          onChange={(v) => onChange({ autoLimitReset: v })}
          help="At the wall, claim the weekly session-limit reset when one is offered (tried before the lane). It still counts toward the weekly limit."
          error={fieldError("/providerSpecific/autoLimitReset")}
        />
        <TextField
          id="conn-org-uuid"
          label="Organization UUID"
          path="/providerSpecific/organizationUUID"
          value={organizationUUID}
          onChange={(v) => onChange({ organizationUUID: v })}
          placeholder="discovered automatically when empty"
          help="The organization whose limit is reset."
          error={fieldError("/providerSpecific/organizationUUID")}
        />
      </div>
      {usage !== undefined && <UsageBars usage={usage} />}
      {wall !== undefined && <ClaudeLiveState wall={wall} />}
    </section>
  );
}

function When({ at, none }: { at: number | null; none: string }) {
  const now = useNow();
  if (at === null || at <= now) return <span className="muted">{none}</span>;
  return (
    <>
      <Countdown expiresAt={at} /> <span className="muted">({formatInstant(at)})</span>
    </>
  );
}

export function ClaudeLiveState({ wall }: { wall: ClaudeWallView | null }) {
  return (
    <div className="live-state" aria-label="Usage-wall state" role="group">
      <h4>Usage-wall state (live)</h4>
      {wall === null ? (
        <p className="muted">No usage-wall activity on this account since the gateway started.</p>
      ) : (
        <dl className="kv">
          <dt>Lane active until</dt>
          <dd>
            <When at={wall.laneActiveUntil} none="Not active" />
          </dd>
          <dt>Last slow status</dt>
          <dd>{wall.lastSlowStatus ? humanize(wall.lastSlowStatus) : <span className="muted">—</span>}</dd>
          <dt>Last lane end</dt>
          <dd>{wall.lastLaneEnd ? humanize(wall.lastLaneEnd) : <span className="muted">—</span>}</dd>
          <dt>Cool-off until</dt>
          <dd>
            <When at={wall.coolOffUntil} none="None" />
          </dd>
          <dt>Budget exhausted until</dt>
          <dd>
            <When at={wall.budgetExhaustedUntil} none="No" />
          </dd>
          <dt>Last reset result</dt>
          <dd>{wall.lastResetResult ? humanize(wall.lastResetResult) : <span className="muted">No reset tried</span>}</dd>
          <dt>Next reset available at</dt>
          <dd>
            <When at={wall.nextResetAvailableAt} none="Now" />
          </dd>
        </dl>
      )}
    </div>
  );
}

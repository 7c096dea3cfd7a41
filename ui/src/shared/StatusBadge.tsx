// Badges for connection and breaker states. `StatusBadge` shows a connection's one
// derived status (`RoutabilityView`, computed by the gateway) the same way on every
// page: its label in a tone by state, the sentence why as the tooltip (and, with
// `showDetail`, under it), and when it ends as a live countdown.
import type { BreakerStateName, ConnectionStatus, RoutabilityState, RoutabilityView } from "../ipc/bindings";
import { Countdown } from "./Countdown";

export const TERMINAL_STATUSES: readonly ConnectionStatus[] = ["banned", "expired", "credits_exhausted"];

/** Whether a cooldown row's status is terminal (never cleared by the Cooldown Manager). */
export function isTerminal(status: ConnectionStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

const STATE_TONE: Record<RoutabilityState, string> = {
  disabled: "badge-muted",
  paused: "badge-warning",
  terminal: "badge-danger",
  "breaker-open": "badge-danger",
  cooling: "badge-warning",
  "test-failed": "badge-danger",
  "breaker-half-open": "badge-info",
  "models-locked": "badge-warning",
  "usage-wall": "badge-info",
  routable: "badge-ok",
};

/** Whether a status is worth a word under its badge (anything but plainly in rotation). */
export function needsAttention(status: RoutabilityView): boolean {
  return status.state !== "routable";
}

export function StatusBadge({
  status,
  showDetail = false,
}: {
  status: RoutabilityView;
  /** Also show the sentence under the badge (for anything but "in rotation"). */
  showDetail?: boolean;
}) {
  return (
    <span className="status">
      <span className="status-line">
        <span className={`badge ${STATE_TONE[status.state]}`} title={status.detail} data-state={status.state}>
          {status.label}
        </span>
        {status.until !== null && (
          <span className="small">
            <span className="sr-only">ends in </span>
            <Countdown expiresAt={status.until} expiredLabel="ending" />
          </span>
        )}
      </span>
      {showDetail && needsAttention(status) && <span className="status-detail small muted">{status.detail}</span>}
    </span>
  );
}

const BREAKER_TONE: Record<BreakerStateName, string> = {
  CLOSED: "badge-ok",
  DEGRADED: "badge-warning",
  OPEN: "badge-danger",
  HALF_OPEN: "badge-info",
};

const BREAKER_LABEL: Record<BreakerStateName, string> = {
  CLOSED: "Closed",
  DEGRADED: "Degraded",
  OPEN: "Open",
  HALF_OPEN: "Half-open",
};

export function BreakerBadge({ state }: { state: BreakerStateName }) {
  return <span className={`badge ${BREAKER_TONE[state]}`}>{BREAKER_LABEL[state]}</span>;
}

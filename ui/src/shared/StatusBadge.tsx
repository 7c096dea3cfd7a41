// Badges for connection and breaker states.
import type { BreakerStateName, ConnectionStatus } from "../ipc/bindings";
import { humanize } from "./format";

export const TERMINAL_STATUSES: readonly ConnectionStatus[] = ["banned", "expired", "credits_exhausted"];

export function isTerminal(status: ConnectionStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function ConnectionStatusBadge({ status, enabled = true }: { status: ConnectionStatus | null; enabled?: boolean }) {
  if (!enabled) return <span className="badge badge-muted">Disabled</span>;
  if (status === null) return <span className="badge badge-muted">Unknown</span>;
  if (status === "active") return <span className="badge badge-ok">Active</span>;
  if (status === "unavailable") return <span className="badge badge-warning">Cooling</span>;
  return <span className="badge badge-danger">Terminal: {humanize(status)}</span>;
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

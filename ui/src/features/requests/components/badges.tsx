// How a client request ended, and what happened to each candidate of its route, as
// badges in words.
import type { CandidateFate, RequestOutcome } from "../../../ipc/bindings";
import { humanize } from "../../../shared/format";

type Badge = { label: string; tone: string; help: string };

/** By outcome; keyed by string so an outcome newer than this page still shows (in words). */
const OUTCOME: Record<string, Badge | undefined> = {
  served: { label: "Served", tone: "badge-ok", help: "Served by its first attempt." },
  "served-after-failover": {
    label: "Served after failover",
    tone: "badge-info",
    help: "Served after one or more failed attempts were absorbed by failover.",
  },
  "upstream-rejected": {
    label: "Rejected upstream",
    tone: "badge-warning",
    help: "The upstream refused the request itself (400, 404, 422 …); its answer was relayed.",
  },
  "refused-by-gateway": {
    label: "Refused by gateway",
    tone: "badge-danger",
    help: "The gateway answered without any upstream attempt (every target out of rotation, a lease, a queue timeout, a bad request …).",
  },
  failed: { label: "Failed", tone: "badge-danger", help: "Every attempt failed." },
  cancelled: {
    label: "Cancelled by agent",
    tone: "badge-muted",
    help: "The agent went away before the answer (logged with status 499).",
  },
};

export function OutcomeBadge({ outcome }: { outcome: RequestOutcome }) {
  const o = OUTCOME[outcome] ?? { label: humanize(outcome.replace(/-/g, "_")), tone: "badge-muted", help: outcome };
  return (
    <span className={`badge ${o.tone}`} title={o.help}>
      {o.label}
    </span>
  );
}

const FATE: Record<CandidateFate, { label: string; tone: string }> = {
  served: { label: "Served", tone: "badge-ok" },
  failed: { label: "Failed", tone: "badge-danger" },
  excluded: { label: "Excluded", tone: "badge-warning" },
  leased: { label: "Leased elsewhere", tone: "badge-info" },
  "not-reached": { label: "Not reached", tone: "badge-muted" },
};

export function FateBadge({ fate }: { fate: CandidateFate }) {
  return <span className={`badge ${FATE[fate].tone}`}>{FATE[fate].label}</span>;
}

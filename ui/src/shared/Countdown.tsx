// Live remaining time until an epoch-ms instant, ticking with the shared clock.
import { formatInstant, formatRemaining } from "./format";
import { useNow } from "./useNow";

export function Countdown({
  expiresAt,
  expiredLabel = "expired",
  emptyLabel = "—",
}: {
  /** Epoch milliseconds; null/undefined renders `emptyLabel`. */
  expiresAt: number | null | undefined;
  expiredLabel?: string;
  emptyLabel?: string;
}) {
  const now = useNow();
  if (expiresAt === null || expiresAt === undefined) return <span className="muted">{emptyLabel}</span>;
  const left = expiresAt - now;
  const iso = new Date(expiresAt).toISOString();
  if (left <= 0) {
    return (
      <time className="countdown countdown-done" dateTime={iso} title={formatInstant(expiresAt)}>
        {expiredLabel}
      </time>
    );
  }
  return (
    <time className="countdown" dateTime={iso} title={formatInstant(expiresAt)}>
      {formatRemaining(left)}
    </time>
  );
}

// Live time since an epoch-ms instant ("3m ago"), ticking with the shared clock; the
// instant itself is the tooltip.
import { formatAgo, formatInstant } from "./format";
import { useNow } from "./useNow";

export function Ago({ at }: { at: number }) {
  const now = useNow();
  return (
    <time dateTime={new Date(at).toISOString()} title={formatInstant(at)}>
      {formatAgo(at, now)}
    </time>
  );
}

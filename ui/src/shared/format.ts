// Formatting of numbers, durations and instants for display.

const numberFormat = new Intl.NumberFormat("en-US");

/** 86400000 → "86,400,000". */
export function formatInt(n: number): string {
  return numberFormat.format(n);
}

/** A count with its noun, singular for one: (1, "session") → "1 session", (2, …) → "2 sessions". */
export function formatCount(n: number, noun: string): string {
  return `${formatInt(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** Remaining time, e.g. "45s", "1m 05s", "2h 03m 04s", "3d 04h". */
export function formatRemaining(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (d > 0) return `${d}d ${pad(h)}h`;
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`;
  if (m > 0) return `${m}m ${pad(s)}s`;
  return `${s}s`;
}

/** A millisecond duration in the largest unit that divides it, e.g. 60000 → "1 min". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0";
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "min"],
    [1000, "s"],
  ];
  for (const [size, unit] of units) {
    if (ms >= size && ms % size === 0) return `${formatInt(ms / size)} ${unit}`;
  }
  for (const [size, unit] of units) {
    if (ms >= size) return `${(ms / size).toFixed(1).replace(/\.0$/, "")} ${unit}`;
  }
  return `${formatInt(ms)} ms`;
}

/** An instant as local date and time. */
export function formatInstant(epochMs: number): string {
  return new Date(epochMs).toLocaleString();
}

/** Time since an instant, e.g. "3m ago". */
export function formatAgo(epochMs: number, now: number): string {
  const ms = now - epochMs;
  if (ms < 5000) return "just now";
  return `${formatRemaining(ms).split(" ")[0]} ago`;
}

/** `snake_case` / `SCREAMING_CASE` machine names as words: "quota_exhausted" → "quota exhausted". */
export function humanize(name: string): string {
  return name.replace(/_/g, " ").toLowerCase();
}

// ONE shared 1-second ticker for the whole app: every countdown reads the same clock,
// and the interval only runs while at least one component listens.
import { useSyncExternalStore } from "react";

const TICK_MS = 1000;
let now = Date.now();
let timer: ReturnType<typeof setInterval> | null = null;
const listeners = new Set<() => void>();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (timer === null) {
    now = Date.now();
    timer = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, TICK_MS);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
}

function getSnapshot(): number {
  // While nobody listens the ticker is stopped: catch up lazily, at most once a tick,
  // so consecutive reads within one render agree.
  if (timer === null) {
    const t = Date.now();
    if (t - now >= TICK_MS || t < now) now = t;
  }
  return now;
}

/** The current time in epoch milliseconds, updated once a second. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}

/** Number of running tickers (0 or 1); for tests. */
export function activeTickers(): number {
  return timer === null ? 0 : 1;
}

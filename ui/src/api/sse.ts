// Server-Sent Events over fetch (EventSource cannot send the bearer header): parses
// `event:` / `data:` frames, reconnects with exponential backoff, and while the
// stream is down reports "polling" so the caller can refresh on a timer instead.
import { EVENT_NAMES, isEventName, type EventName, type LiveMode } from "./types";

export type SseFrame = { event: string; data: string };

/**
 * Splits a buffer into complete frames (each ended by a blank line) and the
 * incomplete rest. Comment lines (`:`) are dropped; `event` defaults to "message".
 */
export function parseSseFrames(buffer: string): { frames: SseFrame[]; rest: string } {
  const normalized = buffer.replace(/\r\n?/g, "\n");
  const blocks = normalized.split("\n\n");
  const rest = blocks.pop() ?? "";
  const frames: SseFrame[] = [];
  for (const block of blocks) {
    let event = "message";
    const data: string[] = [];
    let sawField = false;
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") {
        event = value;
        sawField = true;
      } else if (field === "data") {
        data.push(value);
        sawField = true;
      }
    }
    if (sawField) frames.push({ event, data: data.join("\n") });
  }
  return { frames, rest };
}

export type SseOptions = {
  url: string;
  token: string;
  fetchImpl: typeof fetch;
  onEvent: (name: EventName) => void;
  onMode?: (mode: LiveMode) => void;
  /** Refresh cadence while the stream is down (default 5 s). */
  pollIntervalMs?: number;
  /** Longest reconnect delay (default 30 s). */
  maxBackoffMs?: number;
};

/** Delay before reconnect attempt `n` (0-based): 1 s, 2 s, 4 s … capped. */
export function backoffDelay(attempt: number, maxMs = 30_000): number {
  return Math.min(maxMs, 1000 * 2 ** Math.min(attempt, 10));
}

/** Starts the subscription; returns the function that stops it. */
export function subscribeSse(opts: SseOptions): () => void {
  const controller = new AbortController();
  const pollMs = opts.pollIntervalMs ?? 5000;
  let stopped = false;
  let pollTimer: ReturnType<typeof setInterval> | null = null;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let mode: LiveMode | null = null;

  const everything = () => {
    for (const name of EVENT_NAMES) opts.onEvent(name);
  };

  const setMode = (next: LiveMode) => {
    if (mode === next) return;
    const wasPolling = mode === "polling";
    mode = next;
    opts.onMode?.(next);
    if (next === "polling" && pollTimer === null) {
      pollTimer = setInterval(everything, pollMs);
    }
    if (next === "push") {
      if (pollTimer !== null) clearInterval(pollTimer);
      pollTimer = null;
      // Events may have been missed while the stream was down.
      if (wasPolling) everything();
    }
  };

  const connect = async (attempt: number) => {
    try {
      const res = await opts.fetchImpl(opts.url, {
        headers: { Authorization: `Bearer ${opts.token}`, Accept: "text/event-stream" },
        signal: controller.signal,
        cache: "no-store",
      });
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      setMode("push");
      attempt = 0;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        const { frames, rest } = parseSseFrames(buffer);
        buffer = rest;
        for (const f of frames) if (isEventName(f.event)) opts.onEvent(f.event);
      }
    } catch {
      // Falls through to the reconnect below.
    }
    if (stopped) return;
    setMode("polling");
    retryTimer = setTimeout(() => void connect(attempt + 1), backoffDelay(attempt, opts.maxBackoffMs));
  };

  void connect(0);

  return () => {
    stopped = true;
    controller.abort();
    if (pollTimer !== null) clearInterval(pollTimer);
    if (retryTimer !== null) clearTimeout(retryTimer);
  };
}

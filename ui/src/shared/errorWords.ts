// Machine names of upstream failures (a cooldown's `lastErrorKind`, an attempt's
// `errorKind`) in words, as the gateway says them in a connection's status.
import { humanize } from "./format";

const WORDS: Record<string, string> = {
  // The cooldown reasons (ErrorReason).
  rate_limit: "rate limited by the upstream",
  quota_exhausted: "its usage quota is used up",
  concurrency_limited: "too many requests at once for the account",
  auth_error: "the upstream rejected its credentials",
  request_rejected: "the upstream refused the account's requests",
  forbidden: "the upstream forbids this account or model",
  credits_exhausted: "its credits or billing are exhausted",
  banned: "the upstream deactivated the account",
  not_found: "the model or endpoint does not exist there",
  server_error: "the upstream failed (5xx)",
  timeout: "the upstream timed out",
  unreachable: "the upstream could not be reached",
  model_capacity: "the model is overloaded",
  stream_stall: "a stream stalled without output",
  bad_request: "a request was refused as invalid",
  local: "a gateway-side failure",
  unknown: "an unclassified failure",
  // The request log's transport failures.
  connect: "could not connect to the upstream",
  stream_interrupted: "the answer broke off before its first byte",
  stream_truncated: "the answer ended before it was complete",
  oauth_unreachable: "the OAuth token endpoint could not be reached",
  oauth_refresh: "the OAuth token refresh was refused",
  execution_timeout: "the request ran past its time budget",
  client_disconnected: "the agent went away before the answer ended",
};

/** `server_error` → "the upstream failed (5xx)"; `http_429` → "HTTP 429"; unknown names as words. */
export function errorKindWords(kind: string): string {
  const known = WORDS[kind];
  if (known) return known;
  const http = /^http_(\d{3})$/.exec(kind);
  if (http) return `HTTP ${http[1]}`;
  const inStream = /^stream_error:(.+)$/.exec(kind);
  if (inStream) return `the upstream reported ${humanize(inStream[1])} inside its stream`;
  return humanize(kind);
}

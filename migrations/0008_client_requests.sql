-- Issue 13: the agent's view of the request log. One row per client request with
-- its final outcome (separate from the upstream attempts in `request_log`, which
-- share its `request_id`), and the route it took as JSON (candidates, exclusions
-- and their reasons, the strategy's order; never a secret or a body). Written in
-- the same batches as the attempts, pruned to the same retention.
CREATE TABLE client_requests (
    id               INTEGER PRIMARY KEY,
    request_id       TEXT NOT NULL UNIQUE,
    at               INTEGER NOT NULL,
    api_key_id       TEXT,
    route            TEXT NOT NULL,
    model            TEXT NOT NULL,
    status           INTEGER NOT NULL,
    outcome          TEXT NOT NULL,
    error_code       TEXT,
    connection_id    TEXT,
    attempts         INTEGER NOT NULL,
    failed_attempts  INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    route_json       TEXT NOT NULL
);
-- A request's detail reads its attempts.
CREATE INDEX request_log_request ON request_log (request_id);

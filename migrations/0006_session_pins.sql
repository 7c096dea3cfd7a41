-- Issue 12 (SPEC §4.4): session affinity pins survive a restart. One row per
-- (session, provider); the session is a hash of the client's session id, never the
-- id itself. Written in batches off the request path; expiry is lazy (last_seen_at
-- + sessionAffinityTtlMs), and the writer prunes expired rows.
CREATE TABLE session_pins (
    session_key    TEXT NOT NULL,
    provider       TEXT NOT NULL,
    connection_id  TEXT NOT NULL,
    pinned_at      INTEGER NOT NULL,
    last_seen_at   INTEGER NOT NULL,
    PRIMARY KEY (session_key, provider)
);
CREATE INDEX session_pins_last_seen ON session_pins (last_seen_at);

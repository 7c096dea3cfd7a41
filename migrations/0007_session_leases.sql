-- Issue 12 (SPEC §4.4): exclusive session leases. A managed agent (an owner, known
-- only by the SHA-256 of its opaque `vlo_` token) holds one connection exclusively;
-- the generation fences every dispatch. The two partial unique indexes are the
-- guarantee, not the code: at most one ACTIVE row per owner and per connection, so
-- two acquires racing for a connection (two tasks, two processes on this file, or
-- later two replicas) cannot both win. Expiry is lazy: each lease transaction first
-- turns ACTIVE rows past `expires_at` into EXPIRED. Times are Unix milliseconds.
CREATE TABLE session_leases (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_hash     TEXT NOT NULL CHECK (length(owner_hash) = 64 AND owner_hash NOT GLOB '*[^0-9a-f]*'),
    api_key_id     TEXT NOT NULL,
    provider       TEXT NOT NULL,
    connection_id  TEXT NOT NULL,
    generation     INTEGER NOT NULL CHECK (generation > 0),
    state          TEXT NOT NULL CHECK (state IN ('ACTIVE', 'RELEASED', 'EXPIRED', 'INVALIDATED')),
    acquired_at    INTEGER NOT NULL,
    renewed_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    end_reason     TEXT
);
CREATE UNIQUE INDEX session_leases_active_owner ON session_leases (owner_hash) WHERE state = 'ACTIVE';
CREATE UNIQUE INDEX session_leases_active_connection ON session_leases (connection_id) WHERE state = 'ACTIVE';
CREATE INDEX session_leases_owner_history ON session_leases (owner_hash, generation);
CREATE INDEX session_leases_ended ON session_leases (ended_at) WHERE state <> 'ACTIVE';

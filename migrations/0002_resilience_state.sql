-- Persisted resilience state (SPEC 4.1, 4.2): provider breakers and connection
-- cooldown fields survive a restart; model lockouts stay in memory by design.
-- Records are the engine's own serialised form; written on transitions only.

CREATE TABLE domain_circuit_breakers (
    name         TEXT PRIMARY KEY NOT NULL,   -- provider id
    state        TEXT NOT NULL DEFAULT 'CLOSED',
    record_json  TEXT NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE connection_health (
    connection_id  TEXT PRIMARY KEY NOT NULL,
    provider       TEXT NOT NULL,
    record_json    TEXT NOT NULL,
    updated_at     INTEGER NOT NULL
);

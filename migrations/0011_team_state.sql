-- Team mode's in-memory resilience state that other replicas must be able to load
-- when they start or reconnect: a connection's model lockouts ('lockouts') and its
-- Claude usage-wall state ('wall'), as the engine's JSON, with the time of the
-- change. Written only in team mode (Postgres); with the embedded SQLite file the
-- table stays empty (SPEC §4.3/§4.5: that state is in memory on one machine).
CREATE TABLE team_state (
    kind        TEXT NOT NULL,
    key         TEXT NOT NULL,
    state_json  TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
);

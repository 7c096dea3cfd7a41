-- See migrations/0011_team_state.sql: lockout tables and Claude wall state, so a
-- replica that starts or reconnects loads them.
CREATE TABLE team_state (
    kind        TEXT NOT NULL,
    key         TEXT NOT NULL,
    state_json  TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (kind, key)
);

-- Switchyard initial schema: connections, client API keys, combos, aliases,
-- settings documents and the request log. Forward-only; never edit once released.

CREATE TABLE connections (
    id                      TEXT PRIMARY KEY NOT NULL,
    provider                TEXT NOT NULL,
    api_format              TEXT NOT NULL CHECK (api_format IN ('anthropic', 'openai')),
    name                    TEXT NOT NULL,
    auth_kind               TEXT NOT NULL CHECK (auth_kind IN ('api_key', 'oauth', 'none')),
    -- Upstream credentials. They must be readable to call the upstream, so they are
    -- not hashed; the database file is created with mode 0600 and no API returns them.
    api_key                 TEXT,
    access_token            TEXT,
    refresh_token           TEXT,
    token_expires_at        INTEGER,
    base_url                TEXT,
    priority                INTEGER NOT NULL DEFAULT 0,
    enabled                 INTEGER NOT NULL DEFAULT 1,
    max_concurrent          INTEGER,
    models_json             TEXT NOT NULL DEFAULT '[]',
    provider_specific_json  TEXT NOT NULL DEFAULT '{}',
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL
);
CREATE INDEX connections_provider ON connections (provider, priority, id);

CREATE TABLE api_keys (
    id                        TEXT PRIMARY KEY NOT NULL,
    name                      TEXT NOT NULL UNIQUE,
    -- SHA-256 of the key, hex. The plaintext is never stored.
    key_hash                  TEXT NOT NULL UNIQUE,
    scopes_json               TEXT NOT NULL DEFAULT '[]',
    allowed_connections_json  TEXT NOT NULL DEFAULT '[]',
    created_at                INTEGER NOT NULL
);

CREATE TABLE combos (
    name          TEXT PRIMARY KEY NOT NULL,
    strategy      TEXT NOT NULL,
    targets_json  TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE aliases (
    alias       TEXT PRIMARY KEY NOT NULL,
    target      TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- Typed settings documents (JSON), one row per document.
CREATE TABLE settings (
    key         TEXT PRIMARY KEY NOT NULL,
    value_json  TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- One row per upstream attempt. Never holds secrets or lease/affinity headers.
-- A plain rowid key (no AUTOINCREMENT bookkeeping) and no secondary index keep each
-- insert cheap; retention deletes the oldest ids, so ids are never reused.
CREATE TABLE request_log (
    id             INTEGER PRIMARY KEY,
    at             INTEGER NOT NULL,
    request_id     TEXT NOT NULL,
    api_key_id     TEXT,
    route          TEXT NOT NULL,
    provider       TEXT NOT NULL,
    connection_id  TEXT NOT NULL,
    model          TEXT NOT NULL,
    status         INTEGER,
    latency_ms     INTEGER NOT NULL,
    bytes          INTEGER NOT NULL,
    error_kind     TEXT
);

-- Connection formats say what the upstream speaks natively: 'openai-chat' (Chat
-- Completions only) and 'openai-responses' (Responses only) join 'anthropic' and
-- 'openai' (both OpenAI APIs). SQLite cannot change a CHECK constraint in place, so
-- the table is rebuilt with the same columns and rows. No table references it.

CREATE TABLE connections_new (
    id                         TEXT PRIMARY KEY NOT NULL,
    provider                   TEXT NOT NULL,
    api_format                 TEXT NOT NULL
        CHECK (api_format IN ('anthropic', 'openai', 'openai-chat', 'openai-responses')),
    name                       TEXT NOT NULL,
    auth_kind                  TEXT NOT NULL CHECK (auth_kind IN ('api_key', 'oauth', 'none')),
    api_key                    TEXT,
    access_token               TEXT,
    refresh_token              TEXT,
    token_expires_at           INTEGER,
    base_url                   TEXT,
    priority                   INTEGER NOT NULL DEFAULT 0,
    enabled                    INTEGER NOT NULL DEFAULT 1,
    max_concurrent             INTEGER,
    models_json                TEXT NOT NULL DEFAULT '[]',
    provider_specific_json     TEXT NOT NULL DEFAULT '{}',
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL,
    version                    INTEGER NOT NULL DEFAULT 1,
    rate_limit_overrides_json  TEXT NOT NULL DEFAULT '{}',
    rate_limit_protection      INTEGER
);

INSERT INTO connections_new (
    id, provider, api_format, name, auth_kind, api_key, access_token, refresh_token,
    token_expires_at, base_url, priority, enabled, max_concurrent, models_json,
    provider_specific_json, created_at, updated_at, version, rate_limit_overrides_json,
    rate_limit_protection
)
SELECT
    id, provider, api_format, name, auth_kind, api_key, access_token, refresh_token,
    token_expires_at, base_url, priority, enabled, max_concurrent, models_json,
    provider_specific_json, created_at, updated_at, version, rate_limit_overrides_json,
    rate_limit_protection
FROM connections;

DROP TABLE connections;
ALTER TABLE connections_new RENAME TO connections;
CREATE INDEX connections_provider ON connections (provider, priority, id);

-- Connections made from the presets of providers that speak only Chat Completions
-- were stored as 'openai' before this format existed; they are 'openai-chat' now, so
-- a Responses client is translated for them instead of sent a Responses request
-- they cannot answer.
UPDATE connections SET api_format = 'openai-chat'
WHERE api_format = 'openai' AND provider IN ('glm', 'deepseek', 'kimi', 'openrouter', 'ollama', 'lmstudio');

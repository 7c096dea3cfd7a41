-- Optimistic concurrency for management documents (issue 10): every write of a
-- connection, combo, alias or settings document increments its version, which the
-- API returns as an ETag and in the body; a write that names a stale version is
-- refused (412) instead of overwriting a change it never saw.

ALTER TABLE connections ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE combos ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE aliases ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE settings ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

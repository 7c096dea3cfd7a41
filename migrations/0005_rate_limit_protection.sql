-- Issue 11 (SPEC §4.6): per-connection rate-limit protection. NULL = unset (the
-- connection follows requestQueue.autoEnableApiKeyProviders); 1 = forced on.
ALTER TABLE connections ADD COLUMN rate_limit_protection INTEGER;

-- Issue 11 (flow control, SPEC §2/§4.6): per-connection rate-limit overrides
-- (`maxConcurrent`, `modelConcurrency`, `maxWaitMs`, `executionMaxWaitMs`) as one
-- JSON object; '{}' overrides nothing.
ALTER TABLE connections ADD COLUMN rate_limit_overrides_json TEXT NOT NULL DEFAULT '{}';

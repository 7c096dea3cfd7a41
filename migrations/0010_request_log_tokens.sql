-- Token counts per attempt, as the upstream reported them (NULL when it did not).
-- input_tokens excludes cached tokens (Anthropic's meaning; OpenAI counts are
-- converted), so input + cache_read + cache_write is the whole prompt.
ALTER TABLE request_log ADD COLUMN input_tokens INTEGER;
ALTER TABLE request_log ADD COLUMN output_tokens INTEGER;
ALTER TABLE request_log ADD COLUMN cache_read_tokens INTEGER;
ALTER TABLE request_log ADD COLUMN cache_write_tokens INTEGER;

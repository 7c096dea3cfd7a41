-- See migrations/0012_request_stats.sql: per-minute request and attempt counts for
-- the Overview, and an index of the failed attempts. Every replica adds its own
-- counts to the same minute rows.
CREATE TABLE request_stats (
    minute                   BIGINT PRIMARY KEY NOT NULL,
    requests                 BIGINT NOT NULL DEFAULT 0,
    served                   BIGINT NOT NULL DEFAULT 0,
    served_after_failover    BIGINT NOT NULL DEFAULT 0,
    request_errors           BIGINT NOT NULL DEFAULT 0,
    request_attempts         BIGINT NOT NULL DEFAULT 0,
    request_failed_attempts  BIGINT NOT NULL DEFAULT 0,
    attempts                 BIGINT NOT NULL DEFAULT 0,
    failed_attempts          BIGINT NOT NULL DEFAULT 0
);

-- What the log already holds (an upgrade), bucketed the same way.
INSERT INTO request_stats (minute, requests, served, served_after_failover, request_errors,
                           request_attempts, request_failed_attempts)
SELECT (at / 60000) * 60000,
       COUNT(*),
       SUM(CASE WHEN outcome = 'served' THEN 1 ELSE 0 END),
       SUM(CASE WHEN outcome = 'served-after-failover' THEN 1 ELSE 0 END),
       SUM(CASE WHEN outcome NOT IN ('served', 'served-after-failover') THEN 1 ELSE 0 END),
       SUM(attempts),
       SUM(failed_attempts)
FROM client_requests WHERE true GROUP BY (at / 60000) * 60000;

INSERT INTO request_stats (minute, attempts, failed_attempts)
SELECT (at / 60000) * 60000, COUNT(*), COUNT(error_kind)
FROM request_log WHERE true GROUP BY (at / 60000) * 60000
ON CONFLICT (minute) DO UPDATE SET attempts = excluded.attempts, failed_attempts = excluded.failed_attempts;

-- The Overview's latest failures: found through this small index even when failures
-- are rare among a million rows (a backwards scan of the table would read them all).
-- Only failed rows are indexed, so a successful attempt's insert does not touch it.
CREATE INDEX request_log_failed ON request_log (id) WHERE error_kind IS NOT NULL;

-- Issue 16: the Overview's counts without scanning the request log. One row per
-- minute (its start, unix ms) with the client requests and upstream attempts that
-- began in it, added to by the log writer in the same transaction as the rows. The
-- summary sums at most 1,441 of these, whatever the log's size; retention prunes
-- the log by row count and this table by age (two days), independently.
CREATE TABLE request_stats (
    minute                   INTEGER PRIMARY KEY NOT NULL,
    requests                 INTEGER NOT NULL DEFAULT 0,
    served                   INTEGER NOT NULL DEFAULT 0,
    served_after_failover    INTEGER NOT NULL DEFAULT 0,
    request_errors           INTEGER NOT NULL DEFAULT 0,
    request_attempts         INTEGER NOT NULL DEFAULT 0,
    request_failed_attempts  INTEGER NOT NULL DEFAULT 0,
    attempts                 INTEGER NOT NULL DEFAULT 0,
    failed_attempts          INTEGER NOT NULL DEFAULT 0
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

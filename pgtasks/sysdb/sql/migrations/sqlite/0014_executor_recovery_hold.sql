-- After a gap in its heartbeats longer than its lease, an executor holds back its recovery
-- of others' tasks until recover_after (ms): see the PostgreSQL migration 0018.

ALTER TABLE executors ADD COLUMN recover_after INTEGER;

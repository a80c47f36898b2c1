-- Requests to one worker (issue 24: Flower's worker controls: shut down, resize the pool,
-- consume another queue or stop, change a task's time limits). The management API writes a
-- row naming the worker; the worker reads its rows in its report round (woken at once by a
-- NOTIFY), acts, and writes its reply in the same row, where the sender reads it. A row is
-- forgotten once its reply is read, or after an hour. A role without UPDATE on the table
-- (the producer) cannot send commands (row security, as in 0011).
CREATE TABLE __schema__.worker_commands (
    command_id TEXT PRIMARY KEY,
    executor_id TEXT NOT NULL,
    command TEXT NOT NULL,
    arguments TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    reply TEXT,
    replied_at BIGINT
);
CREATE INDEX worker_commands_executor_idx ON __schema__.worker_commands (executor_id, created_at);

ALTER TABLE __schema__.worker_commands ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.worker_commands FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.worker_commands FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.worker_commands FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.worker_commands FOR INSERT WITH CHECK (has_table_privilege('__schema__.worker_commands'::regclass, 'UPDATE'));

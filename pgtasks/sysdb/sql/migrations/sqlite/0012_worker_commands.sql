-- Requests to one worker (issue 24: Flower's worker controls), answered by the worker in
-- the same row: see the PostgreSQL migration 0016.
CREATE TABLE worker_commands (
    command_id TEXT PRIMARY KEY,
    executor_id TEXT NOT NULL,
    command TEXT NOT NULL,
    arguments TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    reply TEXT,
    replied_at INTEGER
);
CREATE INDEX worker_commands_executor_idx ON worker_commands (executor_id, created_at);

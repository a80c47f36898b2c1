-- Durable waiting (issue 30; docs/waiting.md); see the PostgreSQL migration 0017. Messages
-- are received in rowid order (the order they were inserted).
ALTER TABLE workflow_status ADD COLUMN wait_for TEXT;
CREATE INDEX workflow_status_wait_for_idx ON workflow_status (wait_for) WHERE wait_for IS NOT NULL;

CREATE INDEX notifications_unconsumed_idx
    ON notifications (destination_uuid, topic) WHERE consumed = 0;

CREATE TABLE workflow_events_history (
    workflow_uuid TEXT NOT NULL
        REFERENCES workflow_status (workflow_uuid) ON DELETE CASCADE,
    function_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    PRIMARY KEY (workflow_uuid, function_id)
);

CREATE TABLE streams (
    workflow_uuid TEXT NOT NULL
        REFERENCES workflow_status (workflow_uuid) ON DELETE CASCADE,
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    value TEXT,
    serialization TEXT NOT NULL DEFAULT 'json',
    function_id INTEGER NOT NULL,
    PRIMARY KEY (workflow_uuid, key, position)
);

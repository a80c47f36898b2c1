-- Canvas: chains, chords and callbacks resolved in the transaction of each task's outcome.
-- A task that waits for others is inserted WAITING (never claimed); task_links says whom it
-- waits for and what it receives. has_links marks the parents, so that only their outcomes
-- take the slower completion path. meta holds the Celery request extras (headers, root_id,
-- group) as JSON.

ALTER TABLE workflow_status ADD COLUMN has_links INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflow_status ADD COLUMN meta TEXT;

CREATE TABLE task_links (
    parent_uuid TEXT NOT NULL,  -- a task, or a group id (kind 'group')
    child_uuid TEXT NOT NULL,
    kind TEXT NOT NULL,         -- 'chain', 'chord', 'errback' or 'group'
    position INTEGER NOT NULL DEFAULT 0,
    prepend INTEGER NOT NULL DEFAULT 1,
    done INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    result_serialization TEXT,
    PRIMARY KEY (parent_uuid, child_uuid, kind)
);
CREATE INDEX task_links_child_idx ON task_links (child_uuid, kind, position);
-- A chord's body asks, at each parent's outcome, whether any parent is still to come.
CREATE INDEX task_links_chord_waiting_idx ON task_links (child_uuid)
    WHERE kind = 'chord' AND done = 0;

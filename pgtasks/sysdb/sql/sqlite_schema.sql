-- The declared SQLite schema: what applying every migration in migrations/sqlite builds.
-- tests/integration/test_migrations.py checks that the two agree; update both together.

CREATE TABLE workflow_status (
    workflow_uuid TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    name TEXT NOT NULL,
    inputs TEXT NOT NULL,
    output TEXT,
    error TEXT,
    serialization TEXT NOT NULL DEFAULT 'json',
    queue_name TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    deduplication_id TEXT,
    queue_partition_key TEXT,
    delay_until_epoch_ms INTEGER,
    executor_id TEXT,
    application_version TEXT,
    recovery_attempts INTEGER NOT NULL DEFAULT 0,
    max_recovery_attempts INTEGER NOT NULL DEFAULT 100,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    started_at_epoch_ms INTEGER,
    workflow_timeout_ms INTEGER,
    workflow_deadline_epoch_ms INTEGER,
    parent_workflow_id TEXT,
    forked_from TEXT,
    expires_at_epoch_ms INTEGER,
    claim_token TEXT,
    retries INTEGER NOT NULL DEFAULT 0,
    has_links INTEGER NOT NULL DEFAULT 0,
    meta TEXT,
    -- why it ended without its own outcome (records.EndReason), else NULL
    end_reason TEXT,
    wait_for TEXT
);

-- SQLite appends the rowid to every index key, so (queue, priority) is also in FIFO order.
-- The claim reads only ENQUEUED rows in (queue, priority, age) order: a partial index keeps
-- that scan proportional to the backlog, not to the history of finished tasks.
CREATE INDEX workflow_status_enqueued_idx
    ON workflow_status (queue_name, priority)
    WHERE status = 'ENQUEUED';
CREATE INDEX workflow_status_delayed_idx
    ON workflow_status (delay_until_epoch_ms)
    WHERE status = 'DELAYED';
CREATE INDEX workflow_status_pending_executor_idx
    ON workflow_status (executor_id)
    WHERE status = 'PENDING';
CREATE INDEX workflow_status_created_at_idx ON workflow_status (created_at);
CREATE INDEX workflow_status_name_created_at_idx ON workflow_status (name, created_at);
-- Dead letters are rare: their own index keeps a page of them from walking the history.
CREATE INDEX workflow_status_dead_idx
    ON workflow_status (created_at)
    WHERE status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED';
CREATE INDEX workflow_status_parent_idx
    ON workflow_status (parent_workflow_id)
    WHERE parent_workflow_id IS NOT NULL;
-- Deduplication: NULLs are distinct, and the id is cleared when the task finishes, so the
-- pair is unique only among tasks that have not finished.
CREATE UNIQUE INDEX workflow_status_dedup_idx
    ON workflow_status (queue_name, deduplication_id);
-- Global concurrency counts the running tasks of one queue (per partition key).
CREATE INDEX workflow_status_pending_queue_idx
    ON workflow_status (queue_name, queue_partition_key)
    WHERE status = 'PENDING';
-- Rate limits count the tasks of one queue started within the last period.
CREATE INDEX workflow_status_queue_started_idx
    ON workflow_status (queue_name, started_at_epoch_ms)
    WHERE started_at_epoch_ms IS NOT NULL;
-- Expiry: waiting tasks with an expiry, by time.
CREATE INDEX workflow_status_expiring_idx
    ON workflow_status (expires_at_epoch_ms)
    WHERE expires_at_epoch_ms IS NOT NULL AND status IN ('ENQUEUED', 'DELAYED');

CREATE TABLE operation_outputs (
    workflow_uuid TEXT NOT NULL
        REFERENCES workflow_status (workflow_uuid) ON DELETE CASCADE,
    function_id INTEGER NOT NULL,
    function_name TEXT NOT NULL,
    output TEXT,
    error TEXT,
    child_workflow_id TEXT,
    serialization TEXT NOT NULL DEFAULT 'json',
    started_at_epoch_ms INTEGER,
    completed_at_epoch_ms INTEGER,
    executor_id TEXT,
    claim_token TEXT,
    PRIMARY KEY (workflow_uuid, function_id)
);

CREATE TABLE workflow_events (
    workflow_uuid TEXT NOT NULL
        REFERENCES workflow_status (workflow_uuid) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    PRIMARY KEY (workflow_uuid, key)
);

CREATE TABLE notifications (
    message_uuid TEXT PRIMARY KEY,
    destination_uuid TEXT NOT NULL
        REFERENCES workflow_status (workflow_uuid) ON DELETE CASCADE,
    topic TEXT,
    message TEXT NOT NULL,
    created_at_epoch_ms INTEGER NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    consumed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notifications_destination_topic_idx
    ON notifications (destination_uuid, topic);

CREATE TABLE workflow_schedules (
    schedule_id TEXT PRIMARY KEY,
    schedule_name TEXT NOT NULL UNIQUE,
    workflow_name TEXT NOT NULL,
    schedule TEXT NOT NULL,
    cron_timezone TEXT,
    status TEXT NOT NULL DEFAULT 'ACTIVE',
    context TEXT NOT NULL DEFAULT '{}',
    queue_name TEXT,
    last_fired_at TEXT,
    automatic_backfill INTEGER NOT NULL DEFAULT 0,
    interval_seconds INTEGER,
    cron_day_and INTEGER NOT NULL DEFAULT 0,
    options TEXT NOT NULL DEFAULT '{}',
    backfill_window_seconds INTEGER NOT NULL DEFAULT 86400,
    source TEXT NOT NULL DEFAULT 'api',
    active_since TEXT,
    created_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE application_versions (
    version_id TEXT PRIMARY KEY,
    version_name TEXT NOT NULL UNIQUE,
    version_timestamp INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE queues (
    queue_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    concurrency INTEGER,
    worker_concurrency INTEGER,
    rate_limit_max INTEGER,
    rate_limit_period_sec REAL,
    priority_enabled INTEGER NOT NULL DEFAULT 0,
    partition_queue INTEGER NOT NULL DEFAULT 0,
    polling_interval_sec REAL NOT NULL DEFAULT 1.0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    declared TEXT,
    operator_set TEXT NOT NULL DEFAULT '[]',
    -- seconds its finished tasks are kept: NULL the app's result_expires, 0 until deleted by hand
    result_expires_sec REAL
);

CREATE TABLE executors (
    executor_id TEXT PRIMARY KEY,
    hostname TEXT NOT NULL,
    pid INTEGER NOT NULL,
    application_version TEXT NOT NULL,
    queues TEXT NOT NULL DEFAULT '',
    started_at INTEGER NOT NULL,
    last_heartbeat INTEGER NOT NULL,
    lease_ms INTEGER NOT NULL DEFAULT 30000,
    details TEXT,
    recover_after INTEGER  -- no recovery of others' tasks before (0014)
);

-- Requests to one worker (Flower's worker controls), answered in the same row (0012).
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

CREATE TABLE task_links (
    parent_uuid TEXT NOT NULL,
    child_uuid TEXT NOT NULL,
    kind TEXT NOT NULL,
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

-- Durable waiting (migration 0013).
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

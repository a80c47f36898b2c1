-- The declared PostgreSQL schema: what applying every migration in migrations/postgres builds.
-- tests/integration/test_migrations.py checks that the two agree; update both together.

CREATE TABLE __schema__.workflow_status (
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
    delay_until_epoch_ms BIGINT,
    executor_id TEXT,
    application_version TEXT,
    recovery_attempts BIGINT NOT NULL DEFAULT 0,
    max_recovery_attempts INTEGER NOT NULL DEFAULT 100,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    started_at_epoch_ms BIGINT,
    workflow_timeout_ms BIGINT,
    workflow_deadline_epoch_ms BIGINT,
    parent_workflow_id TEXT,
    forked_from TEXT,
    -- FIFO order within a priority, exact even for tasks created in the same millisecond.
    enqueue_seq BIGINT GENERATED ALWAYS AS IDENTITY,
    expires_at_epoch_ms BIGINT,
    claim_token TEXT,
    retries INTEGER NOT NULL DEFAULT 0,
    has_links BOOLEAN NOT NULL DEFAULT FALSE,
    meta TEXT,
    -- why it ended without its own outcome (records.EndReason), else NULL
    end_reason TEXT,
    -- what besides its time wakes a waiting task (migration 0017), else NULL
    wait_for TEXT
);

-- The claim reads only ENQUEUED rows in (queue, priority, age) order: a partial index keeps
-- that scan proportional to the backlog, not to the history of finished tasks.
CREATE INDEX workflow_status_enqueued_idx
    ON __schema__.workflow_status (queue_name, priority, enqueue_seq)
    WHERE status = 'ENQUEUED';
CREATE INDEX workflow_status_delayed_idx
    ON __schema__.workflow_status (delay_until_epoch_ms)
    WHERE status = 'DELAYED';
CREATE INDEX workflow_status_pending_executor_idx
    ON __schema__.workflow_status (executor_id)
    WHERE status = 'PENDING';
CREATE INDEX workflow_status_created_at_idx ON __schema__.workflow_status (created_at);
CREATE INDEX workflow_status_name_created_at_idx ON __schema__.workflow_status (name, created_at);
-- Dead letters are rare: their own index keeps a page of them from walking the history.
CREATE INDEX workflow_status_dead_idx
    ON __schema__.workflow_status (created_at)
    WHERE status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED';
CREATE INDEX workflow_status_parent_idx
    ON __schema__.workflow_status (parent_workflow_id)
    WHERE parent_workflow_id IS NOT NULL;
-- Deduplication: NULLs are distinct, and the id is cleared when the task finishes, so the
-- pair is unique only among tasks that have not finished. Only tasks sent with a
-- deduplication id can conflict: the others have no entry (migration 0015).
CREATE UNIQUE INDEX workflow_status_dedup_idx
    ON __schema__.workflow_status (queue_name, deduplication_id)
    WHERE deduplication_id IS NOT NULL;
-- Global concurrency counts the running tasks of one queue (per partition key).
CREATE INDEX workflow_status_pending_queue_idx
    ON __schema__.workflow_status (queue_name, queue_partition_key)
    WHERE status = 'PENDING';
-- Rate limits count the tasks of one queue started within the last period.
CREATE INDEX workflow_status_queue_started_idx
    ON __schema__.workflow_status (queue_name, started_at_epoch_ms)
    WHERE started_at_epoch_ms IS NOT NULL;
-- Expiry: waiting tasks with an expiry, by time.
CREATE INDEX workflow_status_expiring_idx
    ON __schema__.workflow_status (expires_at_epoch_ms)
    WHERE expires_at_epoch_ms IS NOT NULL AND status IN ('ENQUEUED', 'DELAYED');
CREATE INDEX workflow_status_partition_idx
    ON __schema__.workflow_status (queue_name, queue_partition_key, priority, enqueue_seq)
    WHERE status = 'ENQUEUED';

CREATE TABLE __schema__.operation_outputs (
    workflow_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    function_id INTEGER NOT NULL,
    function_name TEXT NOT NULL,
    output TEXT,
    error TEXT,
    child_workflow_id TEXT,
    serialization TEXT NOT NULL DEFAULT 'json',
    started_at_epoch_ms BIGINT,
    completed_at_epoch_ms BIGINT,
    executor_id TEXT,
    claim_token TEXT,
    PRIMARY KEY (workflow_uuid, function_id)
);

CREATE TABLE __schema__.workflow_events (
    workflow_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    PRIMARY KEY (workflow_uuid, key)
);

CREATE TABLE __schema__.notifications (
    message_uuid TEXT PRIMARY KEY,
    destination_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    topic TEXT,
    message TEXT NOT NULL,
    created_at_epoch_ms BIGINT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    consumed BOOLEAN NOT NULL DEFAULT FALSE,
    seq BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX notifications_destination_topic_idx
    ON __schema__.notifications (destination_uuid, topic);
CREATE INDEX notifications_unconsumed_idx
    ON __schema__.notifications (destination_uuid, topic, seq)
    WHERE NOT consumed;
CREATE INDEX workflow_status_wait_for_idx
    ON __schema__.workflow_status (wait_for)
    WHERE wait_for IS NOT NULL;

CREATE TABLE __schema__.workflow_events_history (
    workflow_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    function_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    PRIMARY KEY (workflow_uuid, function_id)
);

CREATE TABLE __schema__.streams (
    workflow_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    value TEXT,
    serialization TEXT NOT NULL DEFAULT 'json',
    function_id INTEGER NOT NULL,
    PRIMARY KEY (workflow_uuid, key, position)
);

CREATE TABLE __schema__.workflow_schedules (
    schedule_id TEXT PRIMARY KEY,
    schedule_name TEXT NOT NULL UNIQUE,
    workflow_name TEXT NOT NULL,
    schedule TEXT NOT NULL,
    cron_timezone TEXT,
    status TEXT NOT NULL DEFAULT 'ACTIVE',
    context TEXT NOT NULL DEFAULT '{}',
    queue_name TEXT,
    last_fired_at TEXT,
    automatic_backfill BOOLEAN NOT NULL DEFAULT FALSE,
    interval_seconds BIGINT,
    cron_day_and BOOLEAN NOT NULL DEFAULT FALSE,
    options TEXT NOT NULL DEFAULT '{}',
    backfill_window_seconds BIGINT NOT NULL DEFAULT 86400,
    source TEXT NOT NULL DEFAULT 'api',
    active_since TEXT,
    created_at BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE __schema__.application_versions (
    version_id TEXT PRIMARY KEY,
    version_name TEXT NOT NULL UNIQUE,
    version_timestamp BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE __schema__.queues (
    queue_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    concurrency INTEGER,
    worker_concurrency INTEGER,
    rate_limit_max INTEGER,
    rate_limit_period_sec DOUBLE PRECISION,
    priority_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    partition_queue BOOLEAN NOT NULL DEFAULT FALSE,
    polling_interval_sec DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    paused BOOLEAN NOT NULL DEFAULT FALSE,
    declared TEXT,
    operator_set TEXT NOT NULL DEFAULT '[]',
    -- seconds its finished tasks are kept: NULL the app's result_expires, 0 until deleted by hand
    result_expires_sec DOUBLE PRECISION
);

CREATE TABLE __schema__.executors (
    executor_id TEXT PRIMARY KEY,
    hostname TEXT NOT NULL,
    pid INTEGER NOT NULL,
    application_version TEXT NOT NULL,
    queues TEXT NOT NULL DEFAULT '',
    started_at BIGINT NOT NULL,
    last_heartbeat BIGINT NOT NULL,
    lease_ms BIGINT NOT NULL DEFAULT 30000,
    details TEXT,
    recover_after BIGINT  -- no recovery of others' tasks before (migration 0018)
);

-- Requests to one worker (Flower's worker controls), answered by the worker in the same row
-- (migration 0016).
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

CREATE TABLE __schema__.task_links (
    parent_uuid TEXT NOT NULL,
    child_uuid TEXT NOT NULL,
    kind TEXT NOT NULL,
    position INTEGER NOT NULL DEFAULT 0,
    prepend BOOLEAN NOT NULL DEFAULT TRUE,
    done BOOLEAN NOT NULL DEFAULT FALSE,
    result TEXT,
    result_serialization TEXT,
    PRIMARY KEY (parent_uuid, child_uuid, kind)
);
CREATE INDEX task_links_child_idx ON __schema__.task_links (child_uuid, kind, position);
-- A chord's body asks, at each parent's outcome, whether any parent is still to come.
CREATE INDEX task_links_chord_waiting_idx ON __schema__.task_links (child_uuid)
    WHERE kind = 'chord' AND NOT done;

-- Row-level security for the roles of `pgtasks roles` (see migration 0009; the owner bypasses it).
ALTER TABLE __schema__.workflow_status ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.workflow_status FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.workflow_status FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.workflow_status FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.workflow_status FOR INSERT WITH CHECK (
    has_table_privilege('__schema__.workflow_status'::regclass, 'UPDATE')
    OR (status IN ('ENQUEUED', 'DELAYED') AND output IS NULL AND error IS NULL
        AND executor_id IS NULL AND claim_token IS NULL AND recovery_attempts = 0 AND end_reason IS NULL
        AND started_at_epoch_ms IS NULL));

ALTER TABLE __schema__.operation_outputs ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.operation_outputs FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.operation_outputs FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.operation_outputs FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.operation_outputs FOR INSERT WITH CHECK (has_table_privilege('__schema__.operation_outputs'::regclass, 'UPDATE'));

ALTER TABLE __schema__.workflow_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.workflow_events FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.workflow_events FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.workflow_events FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.workflow_events FOR INSERT WITH CHECK (has_table_privilege('__schema__.workflow_events'::regclass, 'UPDATE'));

ALTER TABLE __schema__.notifications ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.notifications FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.notifications FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.notifications FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.notifications FOR INSERT WITH CHECK (
    has_table_privilege('__schema__.notifications'::regclass, 'UPDATE') OR NOT consumed);

ALTER TABLE __schema__.workflow_events_history ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.workflow_events_history FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.workflow_events_history FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.workflow_events_history FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.workflow_events_history FOR INSERT WITH CHECK (has_table_privilege('__schema__.workflow_events_history'::regclass, 'UPDATE'));

ALTER TABLE __schema__.streams ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.streams FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.streams FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.streams FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.streams FOR INSERT WITH CHECK (has_table_privilege('__schema__.streams'::regclass, 'UPDATE'));

ALTER TABLE __schema__.workflow_schedules ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.workflow_schedules FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.workflow_schedules FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.workflow_schedules FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.workflow_schedules FOR INSERT WITH CHECK (has_table_privilege('__schema__.workflow_schedules'::regclass, 'UPDATE'));

ALTER TABLE __schema__.application_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.application_versions FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.application_versions FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.application_versions FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.application_versions FOR INSERT WITH CHECK (has_table_privilege('__schema__.application_versions'::regclass, 'UPDATE'));

ALTER TABLE __schema__.queues ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.queues FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.queues FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.queues FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.queues FOR INSERT WITH CHECK (has_table_privilege('__schema__.queues'::regclass, 'UPDATE'));

ALTER TABLE __schema__.executors ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.executors FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.executors FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.executors FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.executors FOR INSERT WITH CHECK (has_table_privilege('__schema__.executors'::regclass, 'UPDATE'));

ALTER TABLE __schema__.task_links ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.task_links FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.task_links FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.task_links FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.task_links FOR INSERT WITH CHECK (has_table_privilege('__schema__.task_links'::regclass, 'UPDATE'));

ALTER TABLE __schema__.worker_commands ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.worker_commands FOR SELECT USING (true);
CREATE POLICY pgtasks_update ON __schema__.worker_commands FOR UPDATE USING (true) WITH CHECK (true);
CREATE POLICY pgtasks_delete ON __schema__.worker_commands FOR DELETE USING (true);
CREATE POLICY pgtasks_insert ON __schema__.worker_commands FOR INSERT WITH CHECK (has_table_privilege('__schema__.worker_commands'::regclass, 'UPDATE'));

-- Autovacuum for the tables that churn (see migration 0013).
ALTER TABLE __schema__.workflow_status SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE __schema__.operation_outputs SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
ALTER TABLE __schema__.workflow_events SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);

-- Wakes the tasks waiting for wait_for (a message sent, an event set) and announces their
-- queues on channel. SECURITY DEFINER: a producer, which may change no task, may still wake
-- the one its message is for, and nothing else. The advisory lock on wait_for serializes this
-- with a waiter's check-then-suspend (the same lock), so no wake-up falls between the two.
CREATE FUNCTION __schema__.pgtasks_wake(waited TEXT, channel TEXT) RETURNS INTEGER
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('pgtasks.wait'), hashtext(waited));
    WITH woken AS (
        UPDATE __schema__.workflow_status
        SET status = 'ENQUEUED', delay_until_epoch_ms = NULL, wait_for = NULL,
            updated_at = (extract(epoch FROM statement_timestamp()) * 1000)::bigint
        WHERE wait_for = waited AND status = 'DELAYED'
        RETURNING queue_name
    )
    SELECT count(pg_notify(channel, q.queue_name)) INTO n
    FROM (SELECT DISTINCT queue_name FROM woken) AS q;
    RETURN n;
END
$$;

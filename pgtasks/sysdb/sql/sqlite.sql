-- Named statements of the SQLite dialect. Each block starts with "-- name: <name>".
-- __now_ms__ is the database clock in epoch ms. Writes run inside BEGIN IMMEDIATE, so one
-- writer at a time holds the database: the fences below cannot race.

-- name: task_insert
INSERT INTO workflow_status (
    workflow_uuid, status, name, inputs, serialization, queue_name, priority,
    deduplication_id, queue_partition_key, delay_until_epoch_ms, application_version,
    max_recovery_attempts, parent_workflow_id, expires_at_epoch_ms, meta, retries, created_at,
    updated_at)
SELECT :id,
       CASE WHEN t.delay_until > __now_ms__ THEN 'DELAYED' ELSE 'ENQUEUED' END,
       :name, :inputs, :serialization, :queue, :priority, :dedup, :partition_key,
       CASE WHEN t.delay_until > __now_ms__ THEN t.delay_until END,
       :version, :max_attempts, :parent, COALESCE(:expires, __now_ms__ + :expires_rel),
       :meta, :retries, __now_ms__, __now_ms__
FROM (SELECT COALESCE(:delay_abs, __now_ms__ + :delay_rel) AS delay_until) AS t
WHERE true
ON CONFLICT DO NOTHING
RETURNING workflow_uuid

-- name: task_find_by_id
SELECT workflow_uuid, queue_name, deduplication_id FROM workflow_status
WHERE workflow_uuid = :id

-- name: task_find_by_dedup
SELECT workflow_uuid, queue_name, deduplication_id FROM workflow_status
WHERE queue_name = :queue AND deduplication_id = :dedup

-- name: tasks_list_newest
-- Optional filters are "(param IS NULL OR column = param)": a custom plan folds the unset
-- ones away, so the plan is the one of a WHERE built for the filters given (the created_at
-- index walked in order, the filters checked on the way).
SELECT *, rowid AS enqueue_seq FROM workflow_status
WHERE (:status IS NULL OR status IN (SELECT value FROM json_each(:status)))
  AND (:name IS NULL OR name = :name)
  AND (:queue IS NULL OR queue_name = :queue)
  AND (:after IS NULL OR created_at >= :after)
  AND (:before IS NULL OR created_at < :before)
  AND (:executor IS NULL OR executor_id = :executor)
  AND (:key_created IS NULL OR (created_at, rowid) < (:key_created, :key_seq))
ORDER BY created_at DESC, rowid DESC LIMIT :limit

-- name: tasks_recent_ids
-- See postgres.sql: the window's newest tasks and the older PENDING ones, filtered, sorted.
WITH bound AS (
    SELECT coalesce(min(created_at), 0) AS since FROM (
        SELECT created_at FROM workflow_status ORDER BY created_at DESC LIMIT :window
    )
),
recent AS (
    SELECT ws.* FROM workflow_status AS ws, bound WHERE ws.created_at >= bound.since
    UNION ALL
    SELECT ws.* FROM workflow_status AS ws, bound
    WHERE ws.status = 'PENDING' AND ws.created_at < bound.since
),
received AS (
    SELECT workflow_uuid, name, status, updated_at, started_at_epoch_ms,
           coalesce(started_at_epoch_ms, CASE WHEN status = 'DELAYED' THEN created_at END) AS received
    FROM recent
    WHERE (:status IS NULL OR status IN (SELECT value FROM json_each(:status)))
      AND (:name IS NULL OR lower(name) = lower(:name))
      AND (:executor IS NULL OR lower(executor_id) = lower(:executor))
),
keyed AS (
    SELECT workflow_uuid,
           CASE WHEN :order = 'name' THEN lower(name) END AS folded,
           CASE :order WHEN 'updated' THEN updated_at WHEN 'received' THEN received
                       WHEN 'started' THEN started_at_epoch_ms
                       WHEN 'status' THEN (SELECT key FROM json_each(:status_order) WHERE value = status)
           END AS number
    FROM received
    WHERE (:received_after IS NULL OR received IS NULL OR received >= :received_after)
      AND (:received_before IS NULL OR received IS NULL OR received <= :received_before)
)
SELECT workflow_uuid FROM keyed
ORDER BY CASE WHEN NOT :desc THEN folded END ASC NULLS FIRST,
         CASE WHEN :desc THEN folded END DESC NULLS LAST,
         CASE WHEN NOT :desc THEN number END ASC NULLS FIRST,
         CASE WHEN :desc THEN number END DESC NULLS LAST,
         CASE WHEN NOT :desc THEN workflow_uuid END ASC,
         CASE WHEN :desc THEN workflow_uuid END DESC
LIMIT coalesce(:limit, -1) OFFSET :offset

-- name: task_names_recent
WITH bound AS (
    SELECT coalesce(min(created_at), 0) AS since FROM (
        SELECT created_at FROM workflow_status ORDER BY created_at DESC LIMIT :window
    )
)
SELECT DISTINCT name FROM workflow_status AS ws, bound
WHERE ws.created_at >= bound.since AND ws.status NOT IN ('ENQUEUED', 'WAITING')

-- name: tasks_get_many
SELECT *, rowid AS enqueue_seq FROM workflow_status
WHERE workflow_uuid IN (SELECT value FROM json_each(:ids))

-- name: tasks_list_oldest
SELECT *, rowid AS enqueue_seq FROM workflow_status
WHERE (:status IS NULL OR status IN (SELECT value FROM json_each(:status)))
  AND (:name IS NULL OR name = :name)
  AND (:queue IS NULL OR queue_name = :queue)
  AND (:after IS NULL OR created_at >= :after)
  AND (:before IS NULL OR created_at < :before)
  AND (:executor IS NULL OR executor_id = :executor)
  AND (:key_created IS NULL OR (created_at, rowid) > (:key_created, :key_seq))
ORDER BY created_at ASC, rowid ASC LIMIT :limit

-- name: queue_stats
-- Counts of the unfinished tasks of each queue by state (each branch reads one partial index).
SELECT queue_name, 'ENQUEUED' AS status, count(*) AS n,
       min(COALESCE(delay_until_epoch_ms, created_at)) AS oldest
FROM workflow_status WHERE status = 'ENQUEUED' GROUP BY queue_name
UNION ALL
SELECT queue_name, 'PENDING', count(*), min(started_at_epoch_ms)
FROM workflow_status WHERE status = 'PENDING' GROUP BY queue_name
UNION ALL
SELECT queue_name, 'DELAYED', count(*), min(delay_until_epoch_ms)
FROM workflow_status WHERE status = 'DELAYED' GROUP BY queue_name

-- name: queue_activity
-- Tasks started in the last :window_ms per queue and time bucket, by their state now.
SELECT w.queue_name, (w.started_at_epoch_ms / :bucket_ms) * :bucket_ms AS bucket, w.status,
       count(*) AS n
FROM queues AS q JOIN workflow_status AS w ON w.queue_name = q.name
WHERE w.started_at_epoch_ms > __now_ms__ - :window_ms
GROUP BY 1, 2, 3
ORDER BY 1, 2

-- name: queue_latency
-- Enqueue-to-start latency per known queue, p50 and p95 (nearest rank), over the tasks
-- started in the last :window_ms, at most the :sample latest starts per queue (a range of
-- the (queue_name, started_at_epoch_ms) index per queue).
WITH recent AS (
    SELECT w.queue_name,
           max(w.started_at_epoch_ms - max(w.created_at, coalesce(w.delay_until_epoch_ms, 0)), 0) AS wait,
           row_number() OVER (PARTITION BY w.queue_name ORDER BY w.started_at_epoch_ms DESC) AS age_rank
    -- CROSS JOIN keeps queues the outer loop (SQLite never reorders it): one range of the
    -- index per queue instead of a walk of every started task.
    FROM queues AS q CROSS JOIN workflow_status AS w
    WHERE w.queue_name = q.name AND w.started_at_epoch_ms > __now_ms__ - :window_ms
), ranked AS (
    SELECT queue_name, wait,
           row_number() OVER (PARTITION BY queue_name ORDER BY wait) AS rn,
           count(*) OVER (PARTITION BY queue_name) AS total
    FROM recent WHERE age_rank <= :sample
)
SELECT queue_name, count(*) AS n,
       max(CASE WHEN rn <= (total * 50 + 99) / 100 THEN wait END) AS p50,
       max(CASE WHEN rn <= (total * 95 + 99) / 100 THEN wait END) AS p95
FROM ranked
GROUP BY queue_name
ORDER BY queue_name

-- name: task_get
SELECT *, rowid AS enqueue_seq FROM workflow_status WHERE workflow_uuid = :task_id

-- name: tasks_claim_candidates
-- Per queue, so the (queue_name, priority) partial index is walked in order (see sqlite.py).
-- A paused queue yields nothing.
SELECT workflow_uuid, priority, rowid AS enqueue_seq, queue_partition_key AS k FROM workflow_status
WHERE status = 'ENQUEUED' AND queue_name = :queue
  AND NOT EXISTS (SELECT 1 FROM queues WHERE name = :queue AND paused)
  AND (application_version IS NULL OR application_version = :version)
  AND (expires_at_epoch_ms IS NULL OR expires_at_epoch_ms > __now_ms__)
ORDER BY priority, rowid
LIMIT :limit

-- name: queue_running
SELECT queue_partition_key AS k, count(*) AS n FROM workflow_status
WHERE status = 'PENDING' AND queue_name = :queue
GROUP BY queue_partition_key

-- name: queue_started_since
SELECT count(*) AS n FROM workflow_status
WHERE queue_name = :queue AND started_at_epoch_ms > __now_ms__ - :period_ms

-- name: tasks_expire
UPDATE workflow_status
SET status = 'CANCELLED', end_reason = 'EXPIRED', deduplication_id = NULL, updated_at = __now_ms__,
    error = '{"module": "pgtasks.engine.errors", "type": "TaskExpired", "message": "expired before it started", "args": null, "traceback": ""}'
WHERE status IN ('ENQUEUED', 'DELAYED') AND expires_at_epoch_ms <= __now_ms__
RETURNING workflow_uuid, has_links

-- name: queue_get_all
SELECT * FROM queues ORDER BY name

-- name: queue_get_many
SELECT * FROM queues WHERE name IN (SELECT value FROM json_each(:names)) ORDER BY name

-- name: queue_set_paused
-- Creates the queue's row when it has none, so a queue can be paused before any worker saw it.
INSERT INTO queues (queue_id, name, paused, created_at, updated_at)
VALUES (:queue_id, :name, :paused, __now_ms__, __now_ms__)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = __now_ms__
RETURNING *

-- name: queue_get_locked
SELECT * FROM queues WHERE name = :name

-- name: queue_upsert
-- A new queue takes every setting; an existing one only the columns whose set_<column> flag
-- is true (the settings the caller named): the others keep their stored value. Which flags
-- are true is decided from the row queue_get_locked read in the same transaction.
INSERT INTO queues (
    queue_id, name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
    priority_enabled, partition_queue, polling_interval_sec, result_expires_sec, declared,
    operator_set, created_at, updated_at)
VALUES (:queue_id, :name, :concurrency, :worker_concurrency, :rate_limit_max,
        :rate_limit_period_sec, :priority_enabled, :partition_queue,
        :polling_interval_sec, :result_expires_sec, :declared, :operator_set,
        __now_ms__, __now_ms__)
ON CONFLICT (name) DO UPDATE SET
    declared = COALESCE(excluded.declared, queues.declared),
    operator_set = excluded.operator_set,
    concurrency = CASE WHEN :set_concurrency THEN excluded.concurrency
                       ELSE queues.concurrency END,
    worker_concurrency = CASE WHEN :set_worker_concurrency THEN excluded.worker_concurrency
                              ELSE queues.worker_concurrency END,
    rate_limit_max = CASE WHEN :set_rate_limit_max THEN excluded.rate_limit_max
                          ELSE queues.rate_limit_max END,
    rate_limit_period_sec = CASE WHEN :set_rate_limit_period_sec THEN excluded.rate_limit_period_sec
                                 ELSE queues.rate_limit_period_sec END,
    priority_enabled = CASE WHEN :set_priority_enabled THEN excluded.priority_enabled
                            ELSE queues.priority_enabled END,
    partition_queue = CASE WHEN :set_partition_queue THEN excluded.partition_queue
                           ELSE queues.partition_queue END,
    polling_interval_sec = CASE WHEN :set_polling_interval_sec THEN excluded.polling_interval_sec
                                ELSE queues.polling_interval_sec END,
    result_expires_sec = CASE WHEN :set_result_expires_sec THEN excluded.result_expires_sec
                              ELSE queues.result_expires_sec END,
    updated_at = __now_ms__
RETURNING *

-- name: tasks_claim
-- Returns the columns a run reads (rows.CLAIMED_COLUMNS, read by position).
UPDATE workflow_status
SET status = 'PENDING',
    executor_id = :executor_id,
    claim_token = :claim_token,
    application_version = :version,
    recovery_attempts = recovery_attempts + 1,
    started_at_epoch_ms = __now_ms__,
    updated_at = __now_ms__
WHERE workflow_uuid IN (SELECT value FROM json_each(:ids)) AND status = 'ENQUEUED'
RETURNING __claimed_columns__

-- name: task_complete
-- A retry (:retry_in not NULL) sends the task back under the same id with one more retry and
-- fresh attempts, its new arguments, queue (leaving its deduplication id behind) and priority
-- if it gave any; its checkpoints are dropped by steps_clear in the same transaction. An
-- unstarted release (a prefetched task given back) takes back its claim's attempt.
UPDATE workflow_status
SET status = CASE WHEN :retry_in > 0 THEN 'DELAYED'
                  WHEN :retry_in IS NOT NULL THEN 'ENQUEUED'
                  WHEN :status = 'ENQUEUED' AND NOT :unstarted AND recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE :status END,
    output = :output, error = :error,
    executor_id = CASE WHEN :status = 'ENQUEUED' OR :retry_in IS NOT NULL THEN NULL ELSE executor_id END,
    deduplication_id = CASE WHEN :retry_in IS NOT NULL AND :queue IS NOT NULL AND :queue <> queue_name THEN NULL
                            WHEN :retry_in IS NOT NULL THEN deduplication_id
                            WHEN :status = 'ENQUEUED' AND (:unstarted OR recovery_attempts <= max_recovery_attempts)
                            THEN deduplication_id END,
    delay_until_epoch_ms = CASE WHEN :retry_in > 0 THEN __now_ms__ + :retry_in
                                ELSE delay_until_epoch_ms END,
    retries = retries + CASE WHEN :retry_in IS NOT NULL THEN 1 ELSE 0 END,
    inputs = CASE WHEN :retry_in IS NOT NULL AND :inputs IS NOT NULL THEN :inputs ELSE inputs END,
    queue_name = CASE WHEN :retry_in IS NOT NULL AND :queue IS NOT NULL THEN :queue ELSE queue_name END,
    priority = CASE WHEN :retry_in IS NOT NULL AND :priority IS NOT NULL THEN :priority ELSE priority END,
    recovery_attempts = CASE WHEN :retry_in IS NOT NULL THEN 0
                             WHEN :unstarted THEN max(recovery_attempts - 1, 0)
                             ELSE recovery_attempts END,
    updated_at = __now_ms__
WHERE workflow_uuid = :id AND executor_id = :executor_id AND status = 'PENDING'
  AND (:token IS NULL OR claim_token = :token)
RETURNING workflow_uuid

-- name: steps_clear
DELETE FROM operation_outputs WHERE workflow_uuid = :id

-- name: tasks_next_due
-- Milliseconds until the earliest DELAYED task of the queues is due (negative when one is
-- overdue, NULL when none waits).
SELECT min(delay_until_epoch_ms) - __now_ms__ AS due_in_ms
FROM workflow_status
WHERE status = 'DELAYED' AND queue_name IN (SELECT value FROM json_each(:queues))

-- name: tasks_promote_delayed
-- The due time stays on the row: the task's ETA, and where its wait for a worker starts.
UPDATE workflow_status
SET status = 'ENQUEUED', updated_at = __now_ms__
WHERE status = 'DELAYED' AND delay_until_epoch_ms <= __now_ms__

-- name: task_cancel
UPDATE workflow_status
SET status = 'CANCELLED', end_reason = 'CANCELLED', deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = :task_id AND status IN ('ENQUEUED', 'DELAYED', 'PENDING', 'WAITING')
RETURNING has_links

-- name: task_expire_claimed
-- A task claimed ahead (held by a prefork worker) whose expiry passed before it started ends
-- as tasks_expire ends a waiting one (fenced on its executor and claim).
UPDATE workflow_status
SET status = 'CANCELLED', end_reason = 'EXPIRED', deduplication_id = NULL, updated_at = __now_ms__,
    error = '{"module": "pgtasks.engine.errors", "type": "TaskExpired", "message": "expired before it started", "args": null, "traceback": ""}'
WHERE workflow_uuid = :id AND status = 'PENDING' AND executor_id = :executor
  AND (:token IS NULL OR claim_token = :token)
  AND expires_at_epoch_ms <= __now_ms__
RETURNING has_links

-- name: task_revoke_ahead
-- A revoke of an id no task has yet (Celery's workers remember revoked ids): a finished,
-- revoked row under that id, so the task sent later with it returns this row and never runs.
INSERT INTO workflow_status
    (workflow_uuid, status, end_reason, name, inputs, serialization, queue_name, created_at, updated_at)
VALUES (:id, 'CANCELLED', 'CANCELLED', 'celery.revoked', '{"args": [], "kwargs": {}}', 'json',
        :queue, __now_ms__, __now_ms__)
ON CONFLICT (workflow_uuid) DO NOTHING

-- name: task_resume
UPDATE workflow_status
SET status = 'ENQUEUED', executor_id = NULL, application_version = NULL,
    recovery_attempts = 0, delay_until_epoch_ms = NULL, expires_at_epoch_ms = NULL,
    error = NULL, end_reason = NULL, updated_at = __now_ms__
WHERE workflow_uuid = :task_id
  AND status IN ('CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', 'ENQUEUED', 'DELAYED')

-- name: task_fork_insert
INSERT INTO workflow_status (
    workflow_uuid, status, name, inputs, serialization, queue_name, priority,
    queue_partition_key, max_recovery_attempts, forked_from, created_at, updated_at)
SELECT :new_id, 'ENQUEUED', name, inputs, serialization, COALESCE(:queue, queue_name),
       priority, queue_partition_key, max_recovery_attempts, workflow_uuid,
       __now_ms__, __now_ms__
FROM workflow_status WHERE workflow_uuid = :source_id
RETURNING *

-- name: task_fork_copy_steps
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, child_workflow_id,
    serialization, started_at_epoch_ms, completed_at_epoch_ms, executor_id)
SELECT :new_id, function_id, function_name, output, error, child_workflow_id,
       serialization, started_at_epoch_ms, completed_at_epoch_ms, executor_id
FROM operation_outputs WHERE workflow_uuid = :source_id AND function_id < :start_step

-- name: steps_get
SELECT * FROM operation_outputs WHERE workflow_uuid = :task_id ORDER BY function_id

-- name: steps_get_many
SELECT * FROM operation_outputs
WHERE workflow_uuid IN (SELECT value FROM json_each(:task_ids)) ORDER BY workflow_uuid, function_id

-- name: step_record
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, executor_id, claim_token)
SELECT :task_id, :function_id, :function_name, :output, :error, :serialization,
       :started_at, __now_ms__, :executor_id, :claim_token
WHERE EXISTS (
    SELECT 1 FROM workflow_status
    WHERE workflow_uuid = :task_id AND executor_id = :executor_id
      AND (:claim_token IS NULL OR claim_token = :claim_token)
      AND status IN ('PENDING', 'CANCELLED'))
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
RETURNING function_id

-- name: step_owner
SELECT o.executor_id, o.claim_token,
       ws.status AS task_status, ws.executor_id AS task_executor, ws.claim_token AS task_token
FROM operation_outputs AS o
JOIN workflow_status AS ws ON ws.workflow_uuid = o.workflow_uuid
WHERE o.workflow_uuid = :task_id AND o.function_id = :function_id

-- name: task_status
SELECT status AS task_status FROM workflow_status WHERE workflow_uuid = :task_id

-- name: task_owned_by
SELECT 1 FROM workflow_status
WHERE workflow_uuid = :task_id AND status = 'PENDING' AND executor_id = :executor_id
  AND (:claim_token IS NULL OR claim_token = :claim_token)

-- name: executor_get
SELECT * FROM executors WHERE executor_id = :executor_id

-- name: executor_upsert
INSERT INTO executors (
    executor_id, hostname, pid, application_version, queues, started_at, last_heartbeat, lease_ms,
    details)
VALUES (:executor_id, :hostname, :pid, :version, :queues, __now_ms__, __now_ms__, :lease_ms, :details)
ON CONFLICT (executor_id) DO UPDATE
SET hostname = excluded.hostname, pid = excluded.pid,
    application_version = excluded.application_version, queues = excluded.queues,
    started_at = excluded.started_at, last_heartbeat = excluded.last_heartbeat,
    lease_ms = excluded.lease_ms, details = excluded.details

-- name: executor_heartbeat
-- A heartbeat after a gap longer than the lease (an outage, a stalled process) also holds
-- this executor's recovery of others' tasks back for that gap plus one lease (recover_after):
-- their heartbeats lapsed in the same outage, and each renews only once it reconnects. One
-- statement with the renewal, so that no recovery round runs between the two.
UPDATE executors
SET recover_after = CASE WHEN last_heartbeat < __now_ms__ - lease_ms
                         THEN 2 * __now_ms__ - last_heartbeat + lease_ms ELSE recover_after END,
    last_heartbeat = __now_ms__
WHERE executor_id = :executor_id

-- name: executor_may_recover
-- See the PostgreSQL statement.
SELECT EXISTS (SELECT 1 FROM executors
               WHERE executor_id = :exclude AND last_heartbeat >= __now_ms__ - lease_ms
                 AND (recover_after IS NULL OR recover_after <= __now_ms__)) AS may

-- name: executor_delete
DELETE FROM executors WHERE executor_id = :executor_id

-- name: executor_report
UPDATE executors SET details = :details WHERE executor_id = :executor_id

-- name: worker_command_send
INSERT INTO worker_commands (command_id, executor_id, command, arguments, created_at)
VALUES (:command_id, :executor_id, :command, :arguments, __now_ms__)

-- name: worker_commands_pending
SELECT * FROM worker_commands
WHERE executor_id = :executor_id AND created_at > __now_ms__ - :max_age_ms AND reply IS NULL
ORDER BY created_at, command_id

-- name: worker_command_reply
UPDATE worker_commands SET reply = :reply, replied_at = __now_ms__ WHERE command_id = :command_id

-- name: worker_command_get
SELECT * FROM worker_commands WHERE command_id = :command_id

-- name: worker_command_forget
DELETE FROM worker_commands WHERE command_id = :command_id

-- name: worker_commands_clear
DELETE FROM worker_commands WHERE executor_id = :executor_id OR created_at < __now_ms__ - 3600000

-- name: executors_list
SELECT * FROM executors ORDER BY executor_id

-- name: tasks_recover_own
UPDATE workflow_status
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN executor_id END,
    deduplication_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN NULL
                            ELSE deduplication_id END,
    updated_at = __now_ms__
WHERE status = 'PENDING' AND executor_id = :executor_id
RETURNING workflow_uuid, status

-- name: executors_delete_stale
DELETE FROM executors WHERE last_heartbeat < __now_ms__ - COALESCE(:lease_ms, lease_ms)

-- name: executors_without_lease
-- Executors that hold PENDING tasks but have no live lease (their row is stale or gone).
SELECT DISTINCT ws.executor_id FROM workflow_status AS ws
WHERE ws.status = 'PENDING'
  AND ws.executor_id IS NOT :exclude
  AND NOT EXISTS (
      SELECT 1 FROM executors e
      WHERE e.executor_id = ws.executor_id
        AND e.last_heartbeat >= __now_ms__ - COALESCE(:lease_ms, e.lease_ms))

-- name: tasks_recover_executors
UPDATE workflow_status
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN executor_id END,
    deduplication_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN NULL
                            ELSE deduplication_id END,
    updated_at = __now_ms__
WHERE status = 'PENDING' AND executor_id IN (SELECT value FROM json_each(:executors))
RETURNING workflow_uuid, status

-- name: tasks_release_stray
UPDATE workflow_status
SET status = 'ENQUEUED', executor_id = NULL, updated_at = __now_ms__
WHERE status = 'PENDING' AND executor_id = :executor_id
  AND started_at_epoch_ms < __now_ms__ - :older_than_ms
  AND workflow_uuid NOT IN (SELECT value FROM json_each(:keep))
RETURNING workflow_uuid

-- name: version_register
INSERT INTO application_versions (version_id, version_name, version_timestamp, created_at)
VALUES (:version_id, :version_name, __now_ms__, __now_ms__)
ON CONFLICT (version_name) DO NOTHING

-- name: versions_list
SELECT version_name, version_timestamp FROM application_versions
ORDER BY version_timestamp DESC, created_at DESC

-- name: now_ms
SELECT __now_ms__ AS now_ms

-- name: migrations_table_create
CREATE TABLE IF NOT EXISTS pgtasks_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)

-- name: migrations_versions
SELECT version FROM pgtasks_migrations

-- name: migration_record
INSERT INTO pgtasks_migrations VALUES (:version, :name, __now_ms__)

-- name: migrations_applied
SELECT version, name FROM pgtasks_migrations ORDER BY version

-- =============================================================================================
-- Schedules (workflow_schedules; Python in schedules.py). last_fired_at and
-- active_since hold canonical UTC text (YYYY-MM-DDTHH:MM:SSZ), which sorts as time does.
-- =============================================================================================

-- name: schedule_upsert
-- A new schedule starts ACTIVE. A changed timing, or an INACTIVE schedule coming back, restarts
-- at active_since (nothing before it is backfilled); a PAUSED schedule stays paused. The SET
-- expressions read the row as it was before this update. A schedule belongs to its source:
-- a live row of another source is left alone (no row is returned, the caller reports it).
INSERT INTO workflow_schedules AS s (
    schedule_id, schedule_name, workflow_name, schedule, cron_timezone, status, context,
    queue_name, last_fired_at, automatic_backfill, interval_seconds, cron_day_and, options,
    backfill_window_seconds, source, active_since, created_at, updated_at)
VALUES (:schedule_id, :name, :task_name, :schedule, :timezone, 'ACTIVE', :context,
        :queue_name, NULL, :automatic_backfill, :interval_seconds, :day_and, :options,
        :backfill_window_seconds, :source, :active_since, __now_ms__, __now_ms__)
ON CONFLICT (schedule_name) DO UPDATE SET
    workflow_name = excluded.workflow_name,
    schedule = excluded.schedule,
    cron_timezone = excluded.cron_timezone,
    interval_seconds = excluded.interval_seconds,
    cron_day_and = excluded.cron_day_and,
    context = excluded.context,
    options = excluded.options,
    queue_name = excluded.queue_name,
    automatic_backfill = excluded.automatic_backfill,
    backfill_window_seconds = excluded.backfill_window_seconds,
    source = excluded.source,
    active_since = CASE
        WHEN s.status = 'INACTIVE'
          OR s.schedule IS NOT excluded.schedule
          OR s.cron_timezone IS NOT excluded.cron_timezone
          OR s.interval_seconds IS NOT excluded.interval_seconds
          OR s.cron_day_and IS NOT excluded.cron_day_and
        THEN excluded.active_since ELSE s.active_since END,
    status = CASE WHEN s.status = 'INACTIVE' THEN 'ACTIVE' ELSE s.status END,
    updated_at = __now_ms__
WHERE s.source = excluded.source OR s.status = 'INACTIVE'
RETURNING *

-- name: schedules_deactivate_missing
UPDATE workflow_schedules
SET status = 'INACTIVE', updated_at = __now_ms__
WHERE source = :source AND status <> 'INACTIVE'
  AND schedule_name NOT IN (SELECT value FROM json_each(:names))
RETURNING schedule_name

-- name: schedules_list
SELECT * FROM workflow_schedules
WHERE (:name IS NULL OR schedule_name = :name)
  AND (json_array_length(:statuses) = 0 OR status IN (SELECT value FROM json_each(:statuses)))
ORDER BY schedule_name

-- name: schedule_set_status
-- Resuming restarts the cursor at active_since: the paused time is not backfilled.
UPDATE workflow_schedules
SET active_since = CASE WHEN :status = 'ACTIVE' AND status <> 'ACTIVE'
                        THEN :active_since ELSE active_since END,
    status = :status,
    updated_at = __now_ms__
WHERE schedule_name = :name
RETURNING *

-- name: schedule_delete
DELETE FROM workflow_schedules WHERE schedule_name = :name

-- name: schedule_advance
-- The compare-and-set of a fire (inside BEGIN IMMEDIATE: one writer at a time).
UPDATE workflow_schedules
SET last_fired_at = :new_last_fired_at, updated_at = __now_ms__
WHERE schedule_name = :name AND status = 'ACTIVE'
  AND last_fired_at IS :expected_last_fired_at
  AND active_since IS :expected_active_since
RETURNING schedule_name

-- name: schedule_latest_version
-- Scheduled tasks go to the newest registered version that has a live worker (a heartbeat
-- within its lease) serving the task's queue: a version being rolled out gets the fires as
-- soon as one of its workers serves the queue, and a rolled-back version, whose workers are
-- gone, gets none. With no such worker, the newest registered version.
SELECT v.version_name FROM application_versions AS v
ORDER BY EXISTS (SELECT 1 FROM executors AS e
                 WHERE e.application_version = v.version_name
                   AND e.last_heartbeat >= __now_ms__ - e.lease_ms
                   AND instr(',' || e.queues || ',', ',' || :queue || ',') > 0) DESC,
         v.version_timestamp DESC, v.created_at DESC
LIMIT 1

-- =============================================================================================
-- Canvas links (task_links; Python in links.py). Every statement runs inside the transaction
-- of a canvas insert or of a parent's outcome.
-- =============================================================================================

-- name: task_set_waiting
UPDATE workflow_status SET status = 'WAITING'
WHERE workflow_uuid = :id AND status IN ('ENQUEUED', 'DELAYED')

-- name: task_set_has_links
UPDATE workflow_status SET has_links = 1 WHERE workflow_uuid = :id

-- name: link_insert
INSERT INTO task_links (parent_uuid, child_uuid, kind, position, prepend)
VALUES (:parent, :child, :kind, :position, :prepend)
ON CONFLICT DO NOTHING

-- name: links_of_parent
-- Children in id order: two parents resolving links to the same children lock them in the
-- same order.
SELECT l.child_uuid, l.kind, l.prepend, p.serialization
FROM task_links AS l JOIN workflow_status AS p ON p.workflow_uuid = l.parent_uuid
WHERE l.parent_uuid = :id AND l.kind <> 'group'
ORDER BY l.child_uuid, l.kind

-- name: task_lock
-- (Inside BEGIN IMMEDIATE: one writer at a time, so chord parents cannot interleave.)
SELECT status, inputs, serialization FROM workflow_status
WHERE workflow_uuid = :id

-- name: link_done
UPDATE task_links SET done = 1, result = :result, result_serialization = :tag
WHERE parent_uuid = :parent AND child_uuid = :child AND kind = :kind

-- name: chord_waiting
-- (task_links_chord_waiting_idx: only the parents still to come are in the index.)
SELECT EXISTS (SELECT 1 FROM task_links
               WHERE child_uuid = :child AND kind = 'chord' AND done = 0) AS waiting

-- name: chord_results
SELECT result, result_serialization FROM task_links
WHERE child_uuid = :child AND kind = 'chord'
ORDER BY position

-- name: task_activate
UPDATE workflow_status
SET parent_workflow_id = COALESCE(:parent, parent_workflow_id),
    inputs = :inputs, serialization = :tag, updated_at = __now_ms__,
    status = CASE WHEN delay_until_epoch_ms > __now_ms__ THEN 'DELAYED' ELSE 'ENQUEUED' END
WHERE workflow_uuid = :id AND status = 'WAITING'
RETURNING queue_name, status

-- name: task_end_waiting
UPDATE workflow_status
SET status = :status, error = :error, end_reason = :reason, deduplication_id = NULL,
    updated_at = __now_ms__
WHERE workflow_uuid = :id AND status = 'WAITING'
RETURNING has_links

-- name: task_set_replaced
-- Task.replace: the running task waits for its replacement (fenced on its executor and run).
UPDATE workflow_status SET status = 'WAITING', updated_at = __now_ms__
WHERE workflow_uuid = :id AND status = 'PENDING' AND executor_id = :executor
  AND (:token IS NULL OR claim_token = :token)
RETURNING workflow_uuid

-- name: task_end_replaced
UPDATE workflow_status
SET status = 'SUCCESS', output = :output, error = NULL, deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = :id AND status = 'WAITING'
RETURNING has_links

-- name: link_delete_open
-- The open link of a chord header sent task by task (position -1: never among the results).
DELETE FROM task_links
WHERE parent_uuid = :parent AND child_uuid = :child AND kind = 'chord' AND position = -1
RETURNING prepend

-- name: task_store_outcome
-- Celery's backend.store_result: a state written by hand, whatever the task's state was.
UPDATE workflow_status
SET status = :status, output = :output, error = :error, end_reason = NULL,
    deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = :id
RETURNING has_links

-- name: chord_bodies_of_member
-- The chord bodies a header task counts towards (add_to_chord), in id order.
SELECT child_uuid, prepend FROM task_links
WHERE parent_uuid = :member AND kind = 'chord'
ORDER BY child_uuid

-- name: chord_link_append
-- One more header task for a chord (add_to_chord), after the last (inside BEGIN IMMEDIATE).
INSERT INTO task_links (parent_uuid, child_uuid, kind, position, prepend)
SELECT :parent, :child, 'chord', COALESCE(MAX(position), -1) + 1, :prepend
FROM task_links WHERE child_uuid = :child AND kind = 'chord'
ON CONFLICT DO NOTHING

-- name: task_outcome_lock
-- A task a canvas links from without inserting it (its id existed): its outcome, if any.
SELECT status, output, error FROM workflow_status
WHERE workflow_uuid = :id

-- name: group_members
SELECT child_uuid FROM task_links
WHERE parent_uuid = :group AND kind = 'group'
ORDER BY position

-- name: task_children
-- The tasks a task sent (parent_workflow_id) and those it hands its result to (links).
SELECT workflow_uuid AS child_uuid FROM workflow_status WHERE parent_workflow_id = :id
UNION
SELECT child_uuid FROM task_links WHERE parent_uuid = :id AND kind IN ('chain', 'chord')
ORDER BY child_uuid

-- name: task_children_many
-- task_children of several tasks in one statement (a page of Flower's /api/tasks).
SELECT parent_workflow_id AS parent_uuid, workflow_uuid AS child_uuid FROM workflow_status
WHERE parent_workflow_id IN (SELECT value FROM json_each(:ids))
UNION
SELECT parent_uuid, child_uuid FROM task_links
WHERE parent_uuid IN (SELECT value FROM json_each(:ids)) AND kind IN ('chain', 'chord')
ORDER BY parent_uuid, child_uuid

-- name: task_links_around
-- Every link that ends or starts at one task (the canvas graph around it), and the tasks it
-- sent as 'sent' links.
SELECT parent_uuid, child_uuid, kind, position, done FROM task_links WHERE parent_uuid = :id
UNION ALL
SELECT parent_uuid, child_uuid, kind, position, done FROM task_links WHERE child_uuid = :id
UNION ALL
SELECT parent_workflow_id, workflow_uuid, 'sent', 0, status NOT IN ('ENQUEUED', 'DELAYED', 'PENDING')
FROM workflow_status WHERE parent_workflow_id = :id
ORDER BY 3, 4, 1, 2
LIMIT :limit

-- name: task_event_set
-- A value published by a running task under a key (Celery's update_state uses 'state').
-- (The WHERE also keeps SQLite from reading ON CONFLICT as part of the SELECT.)
INSERT INTO workflow_events (workflow_uuid, key, value, serialization)
SELECT :id, :key, :value, :tag
WHERE EXISTS (SELECT 1 FROM workflow_status WHERE workflow_uuid = :id)
ON CONFLICT (workflow_uuid, key) DO UPDATE SET value = excluded.value, serialization = excluded.serialization
RETURNING workflow_uuid

-- name: task_event_get
SELECT value, serialization FROM workflow_events
WHERE workflow_uuid = :id AND key = :key

-- name: tasks_to_terminate
-- Tasks this executor runs that were revoked with terminate=True since.
SELECT s.workflow_uuid FROM workflow_status AS s
JOIN workflow_events AS e ON e.workflow_uuid = s.workflow_uuid AND e.key = 'terminate'
WHERE s.workflow_uuid IN (SELECT value FROM json_each(:ids)) AND s.status = 'CANCELLED'

-- fragment: prunable_tasks
-- Retention, the one definition of what pruning deletes (see the PostgreSQL fragment):
-- finished, past the age of its queue, not dead letters, not needed by an unfinished canvas
-- child.
WITH ages AS (
    SELECT name, CAST(round(result_expires_sec * 1000) AS INTEGER) AS ms
    FROM queues
    WHERE :per_queue AND result_expires_sec IS NOT NULL
)
SELECT ws.workflow_uuid, ws.queue_name
FROM workflow_status ws
LEFT JOIN ages a ON a.name = ws.queue_name
WHERE ws.created_at < __now_ms__ - (SELECT min(m) FROM (SELECT :older_than_ms AS m
                                                   UNION ALL SELECT ms FROM ages WHERE ms > 0) AS f)
  AND ws.updated_at < __now_ms__ - CASE WHEN a.name IS NULL THEN :older_than_ms
                                        WHEN a.ms > 0 THEN a.ms END
  AND ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED')
  AND (:queue IS NULL OR ws.queue_name = :queue)
  AND NOT EXISTS (
          SELECT 1 FROM task_links l
          JOIN workflow_status c ON c.workflow_uuid = l.child_uuid
          WHERE l.parent_uuid = ws.workflow_uuid
            AND c.status NOT IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'))

-- name: tasks_prune_pick
-- The oldest prunable tasks, up to the limit.
__prunable_tasks__
ORDER BY ws.created_at
LIMIT :limit

-- name: tasks_prunable
SELECT p.queue_name, count(*) AS n
FROM (
__prunable_tasks__
) AS p
GROUP BY p.queue_name

-- name: task_forget_pick
SELECT ws.workflow_uuid, ws.queue_name
FROM workflow_status ws
WHERE ws.workflow_uuid = :id
  AND ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')
  AND NOT EXISTS (
      SELECT 1 FROM task_links l
      JOIN workflow_status c ON c.workflow_uuid = l.child_uuid
      WHERE l.parent_uuid = ws.workflow_uuid
        AND c.status NOT IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'))

-- name: tasks_delete_finished
DELETE FROM workflow_status WHERE workflow_uuid IN (SELECT value FROM json_each(:ids))

-- name: task_links_delete_for
DELETE FROM task_links
WHERE parent_uuid IN (SELECT value FROM json_each(:ids)) OR child_uuid IN (SELECT value FROM json_each(:ids))

-- =============================================================================================
-- Durable waiting (waiting.py; docs/waiting.md): sleeps, messages, events and streams.
-- =============================================================================================

-- name: wait_lock
-- Nothing to lock: SQLite's write transactions (BEGIN IMMEDIATE) are already one at a time.
SELECT :wait_for AS wait_for

-- name: task_suspend
UPDATE workflow_status
SET status = 'DELAYED', delay_until_epoch_ms = :wake_at, wait_for = :wait_for,
    executor_id = NULL, recovery_attempts = 0, expires_at_epoch_ms = NULL, updated_at = __now_ms__
WHERE workflow_uuid = :task_id AND status = 'PENDING' AND executor_id = :executor_id
  AND (:claim_token IS NULL OR claim_token = :claim_token)
RETURNING workflow_uuid

-- name: tasks_wake
UPDATE workflow_status
SET status = 'ENQUEUED', delay_until_epoch_ms = NULL, wait_for = NULL, updated_at = __now_ms__
WHERE wait_for = :wait_for AND status = 'DELAYED'

-- name: message_insert
INSERT INTO notifications (
    message_uuid, destination_uuid, topic, message, created_at_epoch_ms, serialization)
SELECT :message_id, :destination, :topic, :message, __now_ms__, :serialization
WHERE EXISTS (SELECT 1 FROM workflow_status WHERE workflow_uuid = :destination)
ON CONFLICT (message_uuid) DO NOTHING
RETURNING message_uuid

-- name: message_oldest
SELECT message_uuid, message, serialization FROM notifications
WHERE destination_uuid = :task_id AND topic = :topic AND consumed = 0
ORDER BY rowid
LIMIT 1

-- name: message_consume
UPDATE notifications SET consumed = 1 WHERE message_uuid = :message_id

-- name: messages_of
SELECT message_uuid, topic, message, serialization, created_at_epoch_ms, consumed
FROM notifications WHERE destination_uuid = :task_id
ORDER BY rowid

-- name: event_history_insert
INSERT INTO workflow_events_history (workflow_uuid, function_id, key, value, serialization)
VALUES (:id, :function_id, :key, :value, :tag)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: event_announce
-- Readers poll on SQLite: nothing to announce.
SELECT :task_id AS task_id

-- name: events_of
SELECT key, value, serialization, function_id FROM workflow_events_history
WHERE workflow_uuid = :task_id ORDER BY function_id

-- name: stream_append
INSERT INTO streams (workflow_uuid, key, position, value, serialization, function_id)
SELECT :task_id, :key,
       COALESCE((SELECT max(position) + 1 FROM streams WHERE workflow_uuid = :task_id AND key = :key), 0),
       :value, :serialization, :function_id
WHERE NOT EXISTS (SELECT 1 FROM streams
                  WHERE workflow_uuid = :task_id AND key = :key AND function_id = :function_id)

-- name: stream_read
SELECT position, value, serialization FROM streams
WHERE workflow_uuid = :task_id AND key = :key AND position >= :start
ORDER BY position
LIMIT :limit

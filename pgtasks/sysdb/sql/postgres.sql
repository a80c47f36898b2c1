-- Named statements of the PostgreSQL dialect. Each block starts with "-- name: <name>".
-- __schema__ is the validated, quoted schema; __now_ms__ the database clock in epoch ms.

-- name: tasks_enqueue
-- One INSERT for any number of tasks. ON CONFLICT DO NOTHING covers both the primary key
-- (re-sent task id) and the deduplication index; the caller sorts out which one it was.
INSERT INTO __schema__.workflow_status AS ws (
    workflow_uuid, status, name, inputs, serialization, queue_name, priority,
    deduplication_id, queue_partition_key, delay_until_epoch_ms, application_version,
    max_recovery_attempts, parent_workflow_id, created_at, updated_at)
SELECT t.id,
       CASE WHEN t.delay_until > __now_ms__ THEN 'DELAYED' ELSE 'ENQUEUED' END,
       t.name, t.inputs, t.serialization, t.queue, t.priority, t.dedup, t.partition_key,
       CASE WHEN t.delay_until > __now_ms__ THEN t.delay_until END,
       t.version, t.max_attempts, t.parent, __now_ms__, __now_ms__
FROM (
    SELECT u.*, COALESCE(u.delay_abs, __now_ms__ + u.delay_rel) AS delay_until
    FROM unnest(%(ids)s::text[], %(names)s::text[], %(inputs)s::text[],
                %(serializations)s::text[], %(queues)s::text[], %(priorities)s::int[],
                %(dedups)s::text[], %(partition_keys)s::text[], %(delays_abs)s::bigint[],
                %(delays_rel)s::bigint[], %(versions)s::text[], %(max_attempts)s::int[],
                %(parents)s::text[])
         WITH ORDINALITY AS u(id, name, inputs, serialization, queue, priority, dedup,
                              partition_key, delay_abs, delay_rel, version, max_attempts,
                              parent, ord)
) t
ORDER BY t.ord
ON CONFLICT DO NOTHING
RETURNING ws.workflow_uuid

-- name: tasks_find_duplicates
SELECT workflow_uuid, queue_name, deduplication_id
FROM __schema__.workflow_status
WHERE workflow_uuid = ANY(%(ids)s::text[])
   OR (queue_name, deduplication_id) IN (
        SELECT * FROM unnest(%(queues)s::text[], %(dedups)s::text[]))

-- name: notify_enqueued
SELECT pg_notify(%(channel)s, %(payload)s)

-- name: task_get
SELECT * FROM __schema__.workflow_status WHERE workflow_uuid = %(task_id)s

-- name: tasks_claim
-- One statement per claim. SKIP LOCKED lets concurrent workers take disjoint rows without
-- waiting on each other; the attempt is counted here, before any body runs, so a task that
-- kills its worker is dead-lettered by recovery instead of looping forever.
-- One LATERAL probe per queue: "queue_name = ANY(...)" cannot walk the partial index in
-- (priority, enqueue_seq) order and degrades to a sort of the whole backlog; with equality
-- each probe is an ordered index scan that stops after LIMIT rows.
WITH picked AS (
    SELECT c.workflow_uuid
    FROM unnest(%(queues)s::text[]) AS q(name)
    CROSS JOIN LATERAL (
        SELECT workflow_uuid, priority, enqueue_seq
        FROM __schema__.workflow_status
        WHERE status = 'ENQUEUED'
          AND queue_name = q.name
          AND (application_version IS NULL OR application_version = %(version)s)
        ORDER BY priority, enqueue_seq
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS c
    ORDER BY c.priority, c.enqueue_seq
    LIMIT %(limit)s
)
UPDATE __schema__.workflow_status AS ws
SET status = 'PENDING',
    executor_id = %(executor_id)s,
    application_version = %(version)s,
    recovery_attempts = ws.recovery_attempts + 1,
    started_at_epoch_ms = __now_ms__,
    updated_at = __now_ms__
FROM picked
WHERE ws.workflow_uuid = picked.workflow_uuid
RETURNING ws.*

-- name: tasks_complete
-- Many outcomes, one statement and one commit. The fence (still PENDING on this executor)
-- makes a worker that lost its lease write nothing. ENQUEUED releases a task unfinished.
UPDATE __schema__.workflow_status AS ws
SET status = CASE WHEN o.status = 'ENQUEUED' AND ws.recovery_attempts > ws.max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE o.status END,
    output = o.output, error = o.error,
    executor_id = CASE WHEN o.status = 'ENQUEUED' THEN NULL ELSE ws.executor_id END,
    deduplication_id = CASE WHEN o.status = 'ENQUEUED' THEN ws.deduplication_id END,
    updated_at = __now_ms__
FROM unnest(%(ids)s::text[], %(statuses)s::text[], %(outputs)s::text[], %(errors)s::text[])
     AS o(id, status, output, error)
WHERE ws.workflow_uuid = o.id
  AND ws.executor_id = %(executor_id)s
  AND ws.status = 'PENDING'
RETURNING ws.workflow_uuid

-- name: tasks_promote_delayed
UPDATE __schema__.workflow_status
SET status = 'ENQUEUED', delay_until_epoch_ms = NULL, updated_at = __now_ms__
WHERE status = 'DELAYED' AND delay_until_epoch_ms <= __now_ms__

-- name: task_cancel
UPDATE __schema__.workflow_status
SET status = 'CANCELLED', deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(task_id)s
  AND status IN ('ENQUEUED', 'DELAYED', 'PENDING')

-- name: task_resume
UPDATE __schema__.workflow_status
SET status = 'ENQUEUED', executor_id = NULL, application_version = NULL,
    recovery_attempts = 0, delay_until_epoch_ms = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(task_id)s
  AND status IN ('CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED', 'ENQUEUED', 'DELAYED')

-- name: task_fork_insert
INSERT INTO __schema__.workflow_status (
    workflow_uuid, status, name, inputs, serialization, queue_name, priority,
    queue_partition_key, max_recovery_attempts, forked_from, created_at, updated_at)
SELECT %(new_id)s, 'ENQUEUED', name, inputs, serialization,
       COALESCE(%(queue)s, queue_name), priority, queue_partition_key,
       max_recovery_attempts, workflow_uuid, __now_ms__, __now_ms__
FROM __schema__.workflow_status
WHERE workflow_uuid = %(source_id)s
RETURNING *

-- name: task_fork_copy_steps
INSERT INTO __schema__.operation_outputs (
    workflow_uuid, function_id, function_name, output, error, child_workflow_id,
    serialization, started_at_epoch_ms, completed_at_epoch_ms, executor_id)
SELECT %(new_id)s, function_id, function_name, output, error, child_workflow_id,
       serialization, started_at_epoch_ms, completed_at_epoch_ms, executor_id
FROM __schema__.operation_outputs
WHERE workflow_uuid = %(source_id)s AND function_id < %(start_step)s

-- name: steps_get
SELECT * FROM __schema__.operation_outputs
WHERE workflow_uuid = %(task_id)s ORDER BY function_id

-- name: step_record
-- FOR SHARE on the task row: a concurrent recovery (UPDATE of that row) waits for this insert
-- or makes it fail the fence, so a step is never recorded by an executor that lost the task.
-- A step that finished after its task was cancelled is still recorded (it did run), and the
-- task stops before its next step.
INSERT INTO __schema__.operation_outputs (
    workflow_uuid, function_id, function_name, output, error, serialization,
    started_at_epoch_ms, completed_at_epoch_ms, executor_id)
SELECT %(task_id)s, %(function_id)s, %(function_name)s, %(output)s, %(error)s,
       %(serialization)s, %(started_at)s, __now_ms__, %(executor_id)s
WHERE EXISTS (
    SELECT 1 FROM __schema__.workflow_status
    WHERE workflow_uuid = %(task_id)s AND executor_id = %(executor_id)s
      AND status IN ('PENDING', 'CANCELLED')
    FOR SHARE)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING
RETURNING function_id

-- name: step_owner
SELECT executor_id FROM __schema__.operation_outputs
WHERE workflow_uuid = %(task_id)s AND function_id = %(function_id)s

-- name: task_owned_by
SELECT 1 FROM __schema__.workflow_status
WHERE workflow_uuid = %(task_id)s AND status = 'PENDING' AND executor_id = %(executor_id)s

-- name: executor_get
SELECT * FROM __schema__.executors WHERE executor_id = %(executor_id)s

-- name: executor_upsert
INSERT INTO __schema__.executors (
    executor_id, hostname, pid, application_version, queues, started_at, last_heartbeat)
VALUES (%(executor_id)s, %(hostname)s, %(pid)s, %(version)s, %(queues)s,
        __now_ms__, __now_ms__)
ON CONFLICT (executor_id) DO UPDATE
SET hostname = EXCLUDED.hostname, pid = EXCLUDED.pid,
    application_version = EXCLUDED.application_version, queues = EXCLUDED.queues,
    started_at = EXCLUDED.started_at, last_heartbeat = EXCLUDED.last_heartbeat

-- name: executor_heartbeat
UPDATE __schema__.executors SET last_heartbeat = __now_ms__
WHERE executor_id = %(executor_id)s

-- name: executor_delete
DELETE FROM __schema__.executors WHERE executor_id = %(executor_id)s

-- name: executors_list
SELECT * FROM __schema__.executors ORDER BY executor_id

-- name: tasks_recover_own
UPDATE __schema__.workflow_status
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts
                       THEN executor_id END,
    updated_at = __now_ms__
WHERE status = 'PENDING' AND executor_id = %(executor_id)s
  AND application_version = %(version)s
RETURNING workflow_uuid, status

-- name: executors_delete_stale
DELETE FROM __schema__.executors
WHERE last_heartbeat < __now_ms__ - %(lease_ms)s
RETURNING executor_id

-- name: tasks_recover_stale
-- PENDING tasks whose executor has no live lease: its row is stale or gone. The partial
-- index on PENDING keeps this proportional to the running tasks.
UPDATE __schema__.workflow_status AS ws
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts
                       THEN ws.executor_id END,
    updated_at = __now_ms__
WHERE ws.status = 'PENDING'
  AND ws.executor_id IS DISTINCT FROM %(exclude)s
  AND NOT EXISTS (
      SELECT 1 FROM __schema__.executors e
      WHERE e.executor_id = ws.executor_id AND e.last_heartbeat >= __now_ms__ - %(lease_ms)s)
RETURNING ws.workflow_uuid, ws.status

-- name: version_register
INSERT INTO __schema__.application_versions (version_id, version_name, version_timestamp, created_at)
VALUES (%(version_id)s, %(version_name)s, __now_ms__, __now_ms__)
ON CONFLICT (version_name) DO NOTHING

-- name: versions_list
SELECT version_name, version_timestamp FROM __schema__.application_versions
ORDER BY version_timestamp DESC, created_at DESC

-- name: now_ms
SELECT __now_ms__

-- Named statements of the PostgreSQL dialect. Each block starts with "-- name: <name>".
-- __schema__ is the validated, quoted schema; __now_ms__ the database clock in epoch ms at
-- the start of the statement (statement_timestamp()).

-- name: tasks_enqueue
-- One INSERT for any number of tasks. ON CONFLICT DO NOTHING covers both the primary key
-- (re-sent task id) and the deduplication index; the caller sorts out which one it was.
-- The same statement sends one NOTIFY per queue that got a task; PostgreSQL delivers it when
-- the transaction commits and folds identical notifications of one transaction into one.
-- tasks_enqueue_new is the same without ON CONFLICT, returning only the count: for tasks whose
-- ids were all just drawn and that carry no deduplication id, nothing can conflict but a
-- retry whose first attempt committed, which fails whole (a unique violation) and is sent
-- again as tasks_enqueue. The conflict check walks each unique index once more before the
-- row's insert walks it, with a lock per row: about a sixth of the server's time per task.
-- __enqueue_now__ is the clock: for many rows a sub-select of __now_ms__, computed once per
-- statement (an InitPlan) where the expression itself (numeric arithmetic) would be computed
-- six times per row; for one row the expression.
WITH inserted AS (
INSERT INTO __schema__.workflow_status AS ws (
    workflow_uuid, status, name, inputs, serialization, queue_name, priority,
    deduplication_id, queue_partition_key, delay_until_epoch_ms, application_version,
    max_recovery_attempts, parent_workflow_id, expires_at_epoch_ms, meta, retries, created_at,
    updated_at)
SELECT t.id,
       CASE WHEN t.delay_until > __enqueue_now__ THEN 'DELAYED' ELSE 'ENQUEUED' END,
       t.name, t.inputs, t.serialization, t.queue, t.priority, t.dedup, t.partition_key,
       CASE WHEN t.delay_until > __enqueue_now__ THEN t.delay_until END,
       t.version, t.max_attempts, t.parent, COALESCE(t.expires, __enqueue_now__ + t.expires_rel),
       t.meta, t.retries, __enqueue_now__, __enqueue_now__
FROM (
    SELECT u.*, COALESCE(u.delay_abs, __enqueue_now__ + u.delay_rel) AS delay_until
    FROM __enqueue_source__ AS u(id, name, inputs, serialization, queue, priority, dedup,
                                 partition_key, delay_abs, delay_rel, version, max_attempts,
                                 parent, expires, expires_rel, meta, retries, ord)
) t
ORDER BY t.ord
__on_conflict__
RETURNING ws.workflow_uuid, ws.queue_name
),
notified AS (
    SELECT count(pg_notify(%(channel)s, q.queue_name)) AS n
    FROM (SELECT DISTINCT queue_name FROM inserted) AS q
)
SELECT __returned__ FROM inserted, notified

-- name: tasks_find_duplicates
-- Two probes: the primary key, and the deduplication index (partial: the IS NOT NULL lets the
-- planner use it for each pair).
SELECT workflow_uuid, queue_name, deduplication_id
FROM __schema__.workflow_status
WHERE workflow_uuid = ANY(%(ids)b::text[])
UNION
SELECT ws.workflow_uuid, ws.queue_name, ws.deduplication_id
FROM unnest(%(queues)b::text[], %(dedups)b::text[]) AS d(queue_name, dedup)
JOIN __schema__.workflow_status AS ws
  ON ws.queue_name = d.queue_name AND ws.deduplication_id = d.dedup AND ws.deduplication_id IS NOT NULL

-- name: tasks_list_newest
-- Optional filters are "(param IS NULL OR column = param)": a custom plan folds the unset
-- ones away, so the plan is the one of a WHERE built for the filters given (the created_at
-- index walked in order, the filters checked on the way).
SELECT * FROM __schema__.workflow_status
WHERE (%(status)s::text[] IS NULL OR status = ANY(%(status)s::text[]))
  AND (%(name)s::text IS NULL OR name = %(name)s)
  AND (%(queue)s::text IS NULL OR queue_name = %(queue)s)
  AND (%(after)s::bigint IS NULL OR created_at >= %(after)s)
  AND (%(before)s::bigint IS NULL OR created_at < %(before)s)
  AND (%(executor)s::text IS NULL OR executor_id = %(executor)s)
  AND (%(key_created)s::bigint IS NULL
       OR (created_at, enqueue_seq) < (%(key_created)s::bigint, %(key_seq)s::bigint))
ORDER BY created_at DESC, enqueue_seq DESC LIMIT %(limit)s

-- name: tasks_recent_ids
-- The recent tasks Flower's API lists: the %(window)s newest by creation (the created_at
-- index walked backwards to the window's oldest creation time) and every PENDING task older
-- than that (its partial index), filtered, then sorted: the cost grows with the window,
-- never with the table. One statement for every order: the sort keys of the other orders
-- are NULL on every row and change nothing; names compare by code point, as Python does.
WITH bound AS (
    SELECT coalesce(min(created_at), 0) AS since FROM (
        SELECT created_at FROM __schema__.workflow_status ORDER BY created_at DESC LIMIT %(window)s
    ) AS newest
),
recent AS (
    SELECT ws.* FROM __schema__.workflow_status AS ws, bound WHERE ws.created_at >= bound.since
    UNION ALL
    SELECT ws.* FROM __schema__.workflow_status AS ws, bound
    WHERE ws.status = 'PENDING' AND ws.created_at < bound.since
),
received AS (
    SELECT workflow_uuid, name, status, updated_at, started_at_epoch_ms,
           coalesce(started_at_epoch_ms, CASE WHEN status = 'DELAYED' THEN created_at END) AS received
    FROM recent
    WHERE (%(status)s::text[] IS NULL OR status = ANY(%(status)s::text[]))
      AND (%(name)s::text IS NULL OR lower(name) = lower(%(name)s::text))
      AND (%(executor)s::text IS NULL OR lower(executor_id) = lower(%(executor)s::text))
),
keyed AS (
    SELECT workflow_uuid,
           CASE WHEN %(order)s::text = 'name' THEN lower(name) COLLATE "C" END AS folded,
           CASE %(order)s::text WHEN 'updated' THEN updated_at WHEN 'received' THEN received
                                WHEN 'started' THEN started_at_epoch_ms
                                WHEN 'status' THEN array_position(%(status_order)s::text[], status)
           END AS number
    FROM received
    WHERE (%(received_after)s::bigint IS NULL OR received IS NULL OR received >= %(received_after)s::bigint)
      AND (%(received_before)s::bigint IS NULL OR received IS NULL OR received <= %(received_before)s::bigint)
)
SELECT workflow_uuid FROM keyed
ORDER BY CASE WHEN NOT %(desc)s::boolean THEN folded END ASC NULLS FIRST,
         CASE WHEN %(desc)s::boolean THEN folded END DESC NULLS LAST,
         CASE WHEN NOT %(desc)s::boolean THEN number END ASC NULLS FIRST,
         CASE WHEN %(desc)s::boolean THEN number END DESC NULLS LAST,
         CASE WHEN NOT %(desc)s::boolean THEN workflow_uuid END ASC,
         CASE WHEN %(desc)s::boolean THEN workflow_uuid END DESC
LIMIT %(limit)s OFFSET %(offset)s

-- name: task_names_recent
-- The names of the tasks a worker has received among the %(window)s newest.
WITH bound AS (
    SELECT coalesce(min(created_at), 0) AS since FROM (
        SELECT created_at FROM __schema__.workflow_status ORDER BY created_at DESC LIMIT %(window)s
    ) AS newest
)
SELECT DISTINCT name FROM __schema__.workflow_status AS ws, bound
WHERE ws.created_at >= bound.since AND ws.status NOT IN ('ENQUEUED', 'WAITING')

-- name: tasks_get_many
SELECT * FROM __schema__.workflow_status WHERE workflow_uuid = ANY(%(ids)b::text[])

-- name: tasks_list_oldest
SELECT * FROM __schema__.workflow_status
WHERE (%(status)s::text[] IS NULL OR status = ANY(%(status)s::text[]))
  AND (%(name)s::text IS NULL OR name = %(name)s)
  AND (%(queue)s::text IS NULL OR queue_name = %(queue)s)
  AND (%(after)s::bigint IS NULL OR created_at >= %(after)s)
  AND (%(before)s::bigint IS NULL OR created_at < %(before)s)
  AND (%(executor)s::text IS NULL OR executor_id = %(executor)s)
  AND (%(key_created)s::bigint IS NULL
       OR (created_at, enqueue_seq) > (%(key_created)s::bigint, %(key_seq)s::bigint))
ORDER BY created_at ASC, enqueue_seq ASC LIMIT %(limit)s

-- name: queue_stats
-- Counts of the unfinished tasks of each queue by state, and when its oldest waiting task
-- became due. One branch per state, each matching a partial index's predicate, so the cost
-- grows with the backlog and never with the history of finished tasks.
SELECT queue_name, 'ENQUEUED' AS status, count(*) AS n,
       min(COALESCE(delay_until_epoch_ms, created_at)) AS oldest
FROM __schema__.workflow_status WHERE status = 'ENQUEUED' GROUP BY queue_name
UNION ALL
SELECT queue_name, 'PENDING', count(*), min(started_at_epoch_ms)
FROM __schema__.workflow_status WHERE status = 'PENDING' GROUP BY queue_name
UNION ALL
SELECT queue_name, 'DELAYED', count(*), min(delay_until_epoch_ms)
FROM __schema__.workflow_status WHERE status = 'DELAYED' GROUP BY queue_name

-- name: queue_activity
-- Tasks started in the last %(window_ms)s per queue and time bucket, by their state now: one
-- range probe of the (queue_name, started_at_epoch_ms) index per known queue, so the cost
-- grows with the recent starts, not with the table.
SELECT q.name AS queue_name, s.bucket, s.status, s.n
FROM __schema__.queues AS q
CROSS JOIN LATERAL (
    SELECT (w.started_at_epoch_ms / %(bucket_ms)s::bigint) * %(bucket_ms)s::bigint AS bucket,
           w.status, count(*) AS n
    FROM __schema__.workflow_status AS w
    WHERE w.queue_name = q.name
      AND w.started_at_epoch_ms > __now_ms__ - %(window_ms)s::bigint
    GROUP BY 1, 2
) AS s
ORDER BY q.name, s.bucket

-- name: queue_latency
-- Enqueue-to-start latency of each known queue: p50 and p95 (nearest rank) over the tasks
-- started in the last %(window_ms)s, at most the %(sample)s latest starts per queue. One
-- backward range probe of the (queue_name, started_at_epoch_ms) index per queue, so the
-- cost is bounded by the sample, never by the history. A start before its due time (a
-- delayed task, an ETA) counts from the due time, not from the send.
SELECT q.name AS queue_name, count(*) AS n,
       max(CASE WHEN r.rn <= (r.total * 50 + 99) / 100 THEN r.wait END) AS p50,
       max(CASE WHEN r.rn <= (r.total * 95 + 99) / 100 THEN r.wait END) AS p95
FROM __schema__.queues AS q
CROSS JOIN LATERAL (
    SELECT s.wait, row_number() OVER (ORDER BY s.wait) AS rn, count(*) OVER () AS total
    FROM (
        SELECT greatest(w.started_at_epoch_ms - greatest(w.created_at, coalesce(w.delay_until_epoch_ms, 0)), 0)
               AS wait
        FROM __schema__.workflow_status AS w
        WHERE w.queue_name = q.name
          AND w.started_at_epoch_ms > __now_ms__ - %(window_ms)s::bigint
        ORDER BY w.started_at_epoch_ms DESC
        LIMIT %(sample)s
    ) AS s
) AS r
GROUP BY q.name
ORDER BY q.name

-- name: task_get
SELECT * FROM __schema__.workflow_status WHERE workflow_uuid = %(task_id)s

-- name: claim_picked
-- The end of every claim statement: the rows chosen in "picked" become PENDING on this
-- executor under a fresh claim token, and the attempt is counted. Spliced into the three
-- claim statements below, each of which locks what it picks (FOR UPDATE SKIP LOCKED), so
-- the rows are still ENQUEUED here. No status test on purpose: it would let the planner
-- reach the rows through a partial index of every waiting task. The ids go through
-- unnest(ARRAY(...)), which the planner takes for a handful of rows, so each is a probe of
-- the primary key even where it cannot read the LIMIT (a generic plan, a computed budget).
-- has_steps (the task ran or was forked before this claim) spares the worker a read of
-- checkpoints for the many tasks that cannot have any; it is read from the row as picked,
-- never from operation_outputs, so no plan depends on that table's statistics. It returns
-- the columns a run reads (rows.CLAIMED_COLUMNS, read by position), not the whole row.
UPDATE __schema__.workflow_status AS ws
SET status = 'PENDING',
    executor_id = %(executor_id)s,
    claim_token = %(claim_token)s,
    application_version = %(version)s,
    recovery_attempts = ws.recovery_attempts + 1,
    started_at_epoch_ms = __now_ms__,
    updated_at = __now_ms__
FROM unnest(ARRAY(SELECT workflow_uuid FROM picked ORDER BY workflow_uuid),
            ARRAY(SELECT seen_before FROM picked ORDER BY workflow_uuid)) AS p(workflow_uuid, seen_before)
WHERE ws.workflow_uuid = p.workflow_uuid
RETURNING __claimed_columns__

-- fragment: free_picked
-- The tasks a claim of queues without limits takes (tasks_claim, tasks_complete_claim).
picked AS (
    SELECT c.workflow_uuid, c.seen_before
    FROM unnest(%(queues)b::text[], %(limits)b::int[]) AS q(name, lim)
    __async_commit__
    CROSS JOIN LATERAL (
        SELECT workflow_uuid, priority, enqueue_seq, started_at_epoch_ms IS NOT NULL OR forked_from IS NOT NULL AS seen_before
        FROM __schema__.workflow_status
        WHERE status = 'ENQUEUED'
          AND queue_name = q.name
          AND (application_version IS NULL OR application_version = %(version)s)
          AND (expires_at_epoch_ms IS NULL OR expires_at_epoch_ms > __now_ms__)
        ORDER BY priority, enqueue_seq
        LIMIT q.lim
        FOR UPDATE SKIP LOCKED
    ) AS c
    WHERE NOT EXISTS (SELECT 1 FROM __schema__.queues AS pq WHERE pq.name = q.name AND pq.paused)
    ORDER BY c.priority, c.enqueue_seq
    LIMIT %(limit)s
)

-- name: tasks_claim
-- One statement per claim. SKIP LOCKED lets concurrent workers take disjoint rows without
-- waiting on each other; the attempt is counted here, before any body runs, so a task that
-- kills its worker is dead-lettered by recovery instead of looping forever.
-- One LATERAL probe per queue: "queue_name = ANY(...)" cannot walk the partial index in
-- (priority, enqueue_seq) order and degrades to a sort of the whole backlog; with equality
-- each probe is an ordered index scan that stops after LIMIT rows. A paused queue is dropped
-- before its probe (one lookup in the queues name index), so a pause holds once it commits.
-- The claim commits without waiting for its WAL flush (synchronous_commit off, for this
-- transaction only): the task's first durable write (a checkpoint, its outcome) flushes the
-- WAL up to and including the claim, so a server crash can only undo a claim whose task has
-- recorded nothing yet, which then runs again as after a worker crash. The start of every
-- task waits for one fsync less. Claims under limits (below) stay synchronous: their counts
-- must survive a crash.
WITH __free_picked__
__claim_picked__

-- name: queue_try_lock
-- Claims of a queue with global limits are serialized by a transaction-level advisory lock:
-- the counts below are then exact. A worker that does not get the lock skips the queue this
-- round instead of waiting (another worker is claiming from it right now).
SELECT pg_try_advisory_xact_lock(%(lock_key)s) AS ok

-- name: tasks_claim_limited
-- Runs after queue_try_lock, in the same transaction but as its own statement, so its
-- snapshot includes every claim committed by the previous lock holder.
WITH budget AS (
    SELECT GREATEST(0, LEAST(
        CASE WHEN EXISTS (SELECT 1 FROM __schema__.queues WHERE name = %(queue)s AND paused)
             THEN 0 ELSE %(limit)s::int END,
        CASE WHEN %(concurrency)s::int IS NULL THEN %(limit)s::int
             ELSE %(concurrency)s::int - (
                 SELECT count(*) FROM __schema__.workflow_status
                 WHERE status = 'PENDING' AND queue_name = %(queue)s)::int END,
        CASE WHEN %(rate_max)s::int IS NULL THEN %(limit)s::int
             ELSE %(rate_max)s::int - (
                 SELECT count(*) FROM __schema__.workflow_status
                 WHERE queue_name = %(queue)s
                   AND started_at_epoch_ms > __now_ms__ - %(period_ms)s::bigint)::int END
    )) AS n
),
locked AS (
    SELECT workflow_uuid, started_at_epoch_ms IS NOT NULL OR forked_from IS NOT NULL AS seen_before
    FROM __schema__.workflow_status
    WHERE status = 'ENQUEUED'
      AND queue_name = %(queue)s
      AND (application_version IS NULL OR application_version = %(version)s)
      AND (expires_at_epoch_ms IS NULL OR expires_at_epoch_ms > __now_ms__)
    ORDER BY priority, enqueue_seq
    LIMIT (SELECT n FROM budget)
    FOR UPDATE SKIP LOCKED
),
picked AS (SELECT workflow_uuid, seen_before FROM locked LIMIT %(limit)s)
__claim_picked__

-- name: tasks_claim_partitioned
-- Concurrency per partition key. The keys that have waiting tasks are found with a loose
-- index scan (one probe of workflow_status_partition_idx per key), and each key is probed for
-- at most its free slots in (priority, enqueue_seq) order: the cost grows with the number of
-- keys and the tasks taken, never with the backlog. Tasks without a key form one more group.
WITH RECURSIVE keys AS (
    (SELECT queue_partition_key AS k FROM __schema__.workflow_status
     WHERE status = 'ENQUEUED' AND queue_name = %(queue)s AND queue_partition_key IS NOT NULL
     ORDER BY queue_partition_key LIMIT 1)
    UNION ALL
    SELECT (SELECT w.queue_partition_key FROM __schema__.workflow_status AS w
            WHERE w.status = 'ENQUEUED' AND w.queue_name = %(queue)s
              AND w.queue_partition_key > keys.k
            ORDER BY w.queue_partition_key LIMIT 1)
    FROM keys WHERE keys.k IS NOT NULL
),
running AS (
    SELECT queue_partition_key AS k, count(*) AS n
    FROM __schema__.workflow_status
    WHERE status = 'PENDING' AND queue_name = %(queue)s
    GROUP BY queue_partition_key
),
candidates AS (
    SELECT c.* FROM keys
    LEFT JOIN running AS r ON r.k = keys.k
    CROSS JOIN LATERAL (
        SELECT w.workflow_uuid, w.priority, w.enqueue_seq,
               w.started_at_epoch_ms IS NOT NULL OR w.forked_from IS NOT NULL AS seen_before
        FROM __schema__.workflow_status AS w
        WHERE w.status = 'ENQUEUED' AND w.queue_name = %(queue)s AND w.queue_partition_key = keys.k
          AND (w.application_version IS NULL OR w.application_version = %(version)s)
          AND (w.expires_at_epoch_ms IS NULL OR w.expires_at_epoch_ms > __now_ms__)
        ORDER BY w.priority, w.enqueue_seq
        LIMIT GREATEST(0, LEAST(%(limit)s::int, COALESCE(%(concurrency)s::int - COALESCE(r.n, 0), %(limit)s::int)))
        FOR UPDATE SKIP LOCKED
    ) AS c
    WHERE keys.k IS NOT NULL
    UNION ALL
    SELECT c.* FROM (SELECT COALESCE((SELECT n FROM running WHERE k IS NULL), 0) AS n) AS r
    CROSS JOIN LATERAL (
        SELECT w.workflow_uuid, w.priority, w.enqueue_seq,
               w.started_at_epoch_ms IS NOT NULL OR w.forked_from IS NOT NULL AS seen_before
        FROM __schema__.workflow_status AS w
        WHERE w.status = 'ENQUEUED' AND w.queue_name = %(queue)s AND w.queue_partition_key IS NULL
          AND (w.application_version IS NULL OR w.application_version = %(version)s)
          AND (w.expires_at_epoch_ms IS NULL OR w.expires_at_epoch_ms > __now_ms__)
        ORDER BY w.priority, w.enqueue_seq
        LIMIT GREATEST(0, LEAST(%(limit)s::int, COALESCE(%(concurrency)s::int - r.n, %(limit)s::int)))
        FOR UPDATE SKIP LOCKED
    ) AS c
),
budget AS (
    SELECT GREATEST(0, LEAST(
        CASE WHEN EXISTS (SELECT 1 FROM __schema__.queues WHERE name = %(queue)s AND paused)
             THEN 0 ELSE %(limit)s::int END,
        CASE WHEN %(rate_max)s::int IS NULL THEN %(limit)s::int
             ELSE %(rate_max)s::int - (
                 SELECT count(*) FROM __schema__.workflow_status
                 WHERE queue_name = %(queue)s
                   AND started_at_epoch_ms > __now_ms__ - %(period_ms)s::bigint)::int END
    )) AS n
),
chosen AS (
    SELECT workflow_uuid, seen_before FROM candidates
    ORDER BY priority, enqueue_seq
    LIMIT (SELECT n FROM budget)
),
picked AS (SELECT workflow_uuid, seen_before FROM chosen LIMIT %(limit)s)
__claim_picked__

-- name: tasks_expire
-- Waiting tasks past their expiry are cancelled, never run (Celery's expires); those with
-- links are resolved in the same transaction (links.py). SKIP LOCKED, as in every
-- maintenance statement: a row someone holds (an operator's SELECT ... FOR UPDATE, a claim in
-- flight) is left to a later round instead of stalling this one.
UPDATE __schema__.workflow_status AS ws
SET status = 'CANCELLED', end_reason = 'EXPIRED', deduplication_id = NULL, updated_at = __now_ms__,
    error = '{"module": "pgtasks.engine.errors", "type": "TaskExpired", "message": "expired before it started", "args": null, "traceback": ""}'
FROM (SELECT workflow_uuid FROM __schema__.workflow_status
      WHERE status IN ('ENQUEUED', 'DELAYED') AND expires_at_epoch_ms <= __now_ms__
      FOR UPDATE SKIP LOCKED) AS free
WHERE ws.workflow_uuid = free.workflow_uuid
  AND ws.status IN ('ENQUEUED', 'DELAYED') AND ws.expires_at_epoch_ms <= __now_ms__
RETURNING ws.workflow_uuid, ws.has_links

-- name: queue_get_all
SELECT * FROM __schema__.queues ORDER BY name

-- name: queue_get_many
SELECT * FROM __schema__.queues WHERE name = ANY(%(names)b::text[]) ORDER BY name

-- name: queue_set_paused
-- Creates the queue's row when it has none, so a queue can be paused before any worker saw it.
INSERT INTO __schema__.queues (queue_id, name, paused, created_at, updated_at)
VALUES (%(queue_id)s, %(name)s, %(paused)s, __now_ms__, __now_ms__)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = __now_ms__
RETURNING *

-- name: queue_get_locked
SELECT * FROM __schema__.queues WHERE name = %(name)s FOR UPDATE

-- name: queue_upsert
-- A new queue takes every setting; an existing one only the columns whose set_<column> flag
-- is true (the settings the caller named): the others keep their stored value. Which flags
-- are true is decided from the row queue_get_locked read in the same transaction.
INSERT INTO __schema__.queues (
    queue_id, name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec,
    priority_enabled, partition_queue, polling_interval_sec, result_expires_sec, declared,
    operator_set, created_at, updated_at)
VALUES (%(queue_id)s, %(name)s, %(concurrency)s, %(worker_concurrency)s, %(rate_limit_max)s,
        %(rate_limit_period_sec)s, %(priority_enabled)s, %(partition_queue)s,
        %(polling_interval_sec)s, %(result_expires_sec)s, %(declared)s, %(operator_set)s,
        __now_ms__, __now_ms__)
ON CONFLICT (name) DO UPDATE SET
    declared = COALESCE(excluded.declared, queues.declared),
    operator_set = excluded.operator_set,
    concurrency = CASE WHEN %(set_concurrency)s THEN excluded.concurrency
                       ELSE queues.concurrency END,
    worker_concurrency = CASE WHEN %(set_worker_concurrency)s THEN excluded.worker_concurrency
                              ELSE queues.worker_concurrency END,
    rate_limit_max = CASE WHEN %(set_rate_limit_max)s THEN excluded.rate_limit_max
                          ELSE queues.rate_limit_max END,
    rate_limit_period_sec = CASE WHEN %(set_rate_limit_period_sec)s THEN excluded.rate_limit_period_sec
                                 ELSE queues.rate_limit_period_sec END,
    priority_enabled = CASE WHEN %(set_priority_enabled)s THEN excluded.priority_enabled
                            ELSE queues.priority_enabled END,
    partition_queue = CASE WHEN %(set_partition_queue)s THEN excluded.partition_queue
                           ELSE queues.partition_queue END,
    polling_interval_sec = CASE WHEN %(set_polling_interval_sec)s THEN excluded.polling_interval_sec
                                ELSE queues.polling_interval_sec END,
    result_expires_sec = CASE WHEN %(set_result_expires_sec)s THEN excluded.result_expires_sec
                              ELSE queues.result_expires_sec END,
    updated_at = __now_ms__
RETURNING *

-- fragment: complete_outcomes
-- The outcomes of tasks_complete (and of tasks_complete_claim): see there.
done AS (
    UPDATE __schema__.workflow_status AS ws
    SET status = CASE WHEN o.retry_in > 0 THEN 'DELAYED'
                      WHEN o.retry_in IS NOT NULL THEN 'ENQUEUED'
                      WHEN o.status = 'ENQUEUED' AND NOT o.unstarted
                           AND ws.recovery_attempts > ws.max_recovery_attempts
                      THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE o.status END,
        output = o.output, error = o.error,
        executor_id = CASE WHEN o.status = 'ENQUEUED' OR o.retry_in IS NOT NULL THEN NULL
                           ELSE ws.executor_id END,
        deduplication_id = CASE WHEN o.retry_in IS NOT NULL AND o.queue IS NOT NULL
                                     AND o.queue <> ws.queue_name THEN NULL
                                WHEN o.retry_in IS NOT NULL THEN ws.deduplication_id
                                WHEN o.status = 'ENQUEUED'
                                     AND (o.unstarted OR ws.recovery_attempts <= ws.max_recovery_attempts)
                                THEN ws.deduplication_id END,
        delay_until_epoch_ms = CASE WHEN o.retry_in > 0 THEN __now_ms__ + o.retry_in
                                    ELSE ws.delay_until_epoch_ms END,
        retries = ws.retries + CASE WHEN o.retry_in IS NOT NULL THEN 1 ELSE 0 END,
        inputs = CASE WHEN o.retry_in IS NOT NULL AND o.inputs IS NOT NULL THEN o.inputs
                      ELSE ws.inputs END,
        queue_name = CASE WHEN o.retry_in IS NOT NULL AND o.queue IS NOT NULL THEN o.queue
                          ELSE ws.queue_name END,
        priority = CASE WHEN o.retry_in IS NOT NULL AND o.priority IS NOT NULL THEN o.priority
                        ELSE ws.priority END,
        recovery_attempts = CASE WHEN o.retry_in IS NOT NULL THEN 0
                                 WHEN o.unstarted THEN greatest(ws.recovery_attempts - 1, 0)
                                 ELSE ws.recovery_attempts END,
        updated_at = __now_ms__
    FROM unnest(%(ids)b::text[], %(statuses)b::text[], %(outputs)b::text[], %(errors)b::text[],
                %(tokens)b::text[], %(retry_in)b::bigint[], %(inputs)b::text[], %(unstarted)b::boolean[],
                %(queues)b::text[], %(priorities)b::int[])
         AS o(id, status, output, error, token, retry_in, inputs, unstarted, queue, priority)
    WHERE ws.workflow_uuid = o.id
      AND ws.executor_id = %(executor_id)s
      AND (o.token IS NULL OR ws.claim_token = o.token)
      AND ws.status = 'PENDING'
    RETURNING ws.workflow_uuid, ws.queue_name, ws.status, o.retry_in IS NOT NULL AS retried
),
cleared AS (
    DELETE FROM __schema__.operation_outputs
    WHERE workflow_uuid IN (SELECT workflow_uuid FROM done WHERE retried)
),
notified AS (
    SELECT count(pg_notify(%(channel)s, q.queue_name)) AS n
    FROM (SELECT DISTINCT queue_name FROM done WHERE retried) AS q
),
-- The ids of the tasks that finished, newline-separated, on the "done" channel for whoever
-- awaits a result (get_async): one notification per 6,000 bytes of ids (a payload must stay
-- under 8,000 bytes; an id is at most 1,020). Only while somebody listens (%(notify_done)s):
-- a notifying commit waits for every other one.
finished AS (
    SELECT count(pg_notify(%(done_channel)s, c.ids)) AS n
    FROM (SELECT string_agg(f.workflow_uuid, E'\n') AS ids
          FROM (SELECT workflow_uuid,
                       sum(octet_length(workflow_uuid) + 1) OVER (ORDER BY workflow_uuid) AS upto
                FROM done WHERE %(notify_done)s
                            AND status IN ('SUCCESS', 'ERROR', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')) AS f
          GROUP BY f.upto / 6000) AS c
)

-- name: tasks_complete
-- Many outcomes, one statement and one commit. The fence (still PENDING on this executor)
-- makes a worker that lost its lease write nothing. ENQUEUED releases a task unfinished. A
-- retry (retry_in not NULL) sends the task back under the same id, DELAYED or ENQUEUED, with
-- one more retry, fresh attempts and no checkpoints (it runs again from scratch), and
-- announces its queue (a task ENQUEUED to claim, a DELAYED one for the workers' due
-- timers). A retry may bring new arguments (inputs), a queue and a priority (moved to another
-- queue, it leaves its deduplication id behind: the id is unique per queue). An unstarted release (a prefetched task
-- given back) takes back its claim's attempt.
WITH __complete_outcomes__
SELECT workflow_uuid FROM done, notified, finished

-- name: tasks_complete_claim
-- The outcomes of one batch (tasks_complete's, without links to resolve) and the claim of
-- the next (tasks_claim's, queues without limits only: a limited queue's claim must see the
-- slots these outcomes free committed) in one statement, one round trip and one commit.
-- Both parts see one snapshot and never touch the same row: a task being completed is
-- PENDING, a claim takes ENQUEUED ones (a retry made ENQUEUED here is for a later claim).
-- The commit is synchronous: the outcomes need their flush. One row per claimed task, or
-- one row of NULLs when none was claimed; the first row carries the ids written.
WITH __complete_outcomes__,
__free_picked__,
claimed AS (
    __claim_picked__
)
SELECT c.*, CASE WHEN row_number() OVER () = 1 THEN w.written END AS written
FROM (SELECT array_agg(done.workflow_uuid) AS written FROM done, notified, finished) AS w
LEFT JOIN claimed AS c ON true

-- name: done_listeners_present
-- Whether a process awaiting results holds the presence lock shared: then this exclusive try
-- fails. (Two senders checking at once may each see the other's try: a NOTIFY too many.)
SELECT NOT pg_try_advisory_xact_lock(%(key)s) AS present

-- fragment: promote_due_tasks
-- SKIP LOCKED: a due task someone holds is promoted by a later round; the others go now.
-- The due time stays on the row: it is the task's ETA, still shown once it has run, and the
-- time its wait for a worker counts from.
UPDATE __schema__.workflow_status AS ws
SET status = 'ENQUEUED', updated_at = __now_ms__
FROM (SELECT workflow_uuid FROM __schema__.workflow_status
      WHERE status = 'DELAYED' AND delay_until_epoch_ms <= __now_ms__
      FOR UPDATE SKIP LOCKED) AS free
WHERE ws.workflow_uuid = free.workflow_uuid
  AND ws.status = 'DELAYED' AND ws.delay_until_epoch_ms <= __now_ms__

-- name: tasks_promote_delayed
__promote_due_tasks__

-- name: tasks_promote_due
-- The due timer's round in one statement: tasks_promote_delayed, then the milliseconds until
-- the earliest DELAYED task of the queues is due (tasks_next_due), not counting the tasks
-- promoted now (the statement's snapshot still shows them DELAYED); a due task left locked
-- by someone else counts (negative: the timer tries again at once).
WITH promoted AS (
    __promote_due_tasks__
    RETURNING ws.workflow_uuid
)
SELECT (SELECT count(*) FROM promoted) AS promoted,
       (SELECT min(d.delay_until_epoch_ms) - __now_ms__
        FROM __schema__.workflow_status AS d
        WHERE d.status = 'DELAYED' AND d.queue_name = ANY(%(queues)b::text[])
          AND d.workflow_uuid NOT IN (SELECT workflow_uuid FROM promoted)) AS due_in_ms

-- name: tasks_next_due
-- Milliseconds until the earliest DELAYED task of the queues is due (negative when one is
-- overdue, NULL when none waits). workflow_status_delayed_idx walks the due times in order.
SELECT min(delay_until_epoch_ms) - __now_ms__ AS due_in_ms
FROM __schema__.workflow_status
WHERE status = 'DELAYED' AND queue_name = ANY(%(queues)b::text[])

-- name: queues_announce
SELECT count(pg_notify(%(channel)s, q)) AS n FROM unnest(%(queues)b::text[]) AS q

-- name: task_cancel
UPDATE __schema__.workflow_status
SET status = 'CANCELLED', end_reason = 'CANCELLED', deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(task_id)s
  AND status IN ('ENQUEUED', 'DELAYED', 'PENDING', 'WAITING')
RETURNING has_links

-- name: task_expire_claimed
-- A task claimed ahead (held by a prefork worker) whose expiry passed before it started ends
-- as tasks_expire ends a waiting one (fenced on its executor and claim).
UPDATE __schema__.workflow_status
SET status = 'CANCELLED', end_reason = 'EXPIRED', deduplication_id = NULL, updated_at = __now_ms__,
    error = '{"module": "pgtasks.engine.errors", "type": "TaskExpired", "message": "expired before it started", "args": null, "traceback": ""}'
WHERE workflow_uuid = %(id)s AND status = 'PENDING' AND executor_id = %(executor)s
  AND (%(token)s::text IS NULL OR claim_token = %(token)s::text)
  AND expires_at_epoch_ms <= __now_ms__
RETURNING has_links

-- name: task_revoke_ahead
-- A revoke of an id no task has yet (Celery's workers remember revoked ids): a finished,
-- revoked row under that id, so the task sent later with it returns this row and never runs.
INSERT INTO __schema__.workflow_status
    (workflow_uuid, status, end_reason, name, inputs, serialization, queue_name, created_at, updated_at)
VALUES (%(id)s, 'CANCELLED', 'CANCELLED', 'celery.revoked', '{"args": [], "kwargs": {}}', 'json',
        %(queue)s, __now_ms__, __now_ms__)
ON CONFLICT (workflow_uuid) DO NOTHING

-- name: task_resume
UPDATE __schema__.workflow_status
SET status = 'ENQUEUED', executor_id = NULL, application_version = NULL,
    recovery_attempts = 0, delay_until_epoch_ms = NULL, expires_at_epoch_ms = NULL,
    error = NULL, end_reason = NULL, updated_at = __now_ms__
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

-- name: steps_get_many
SELECT * FROM __schema__.operation_outputs
WHERE workflow_uuid = ANY(%(task_ids)b::text[]) ORDER BY workflow_uuid, function_id

-- name: step_record
-- FOR SHARE on the task row: a concurrent recovery (UPDATE of that row) waits for this insert
-- or makes it fail the fence, so a step is never recorded by an executor that lost the task.
-- A step that finished after its task was cancelled is still recorded (it did run); the
-- task status returned tells the caller to stop before its next step.
WITH task AS (
    SELECT status FROM __schema__.workflow_status
    WHERE workflow_uuid = %(task_id)s AND executor_id = %(executor_id)s
      AND (%(claim_token)s::text IS NULL OR claim_token = %(claim_token)s)
      AND status IN ('PENDING', 'CANCELLED')
    FOR SHARE
), written AS (
    INSERT INTO __schema__.operation_outputs (
        workflow_uuid, function_id, function_name, output, error, serialization,
        started_at_epoch_ms, completed_at_epoch_ms, executor_id, claim_token)
    SELECT %(task_id)s, %(function_id)s, %(function_name)s, %(output)s, %(error)s,
           %(serialization)s, %(started_at)s, __now_ms__, %(executor_id)s, %(claim_token)s
    FROM task
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
    RETURNING function_id
)
SELECT written.function_id, task.status AS task_status FROM written, task

-- name: steps_record_many
-- Group commit: the checkpoints of many concurrent tasks in one INSERT. Each row carries its
-- own fence; the task rows are locked FOR SHARE in id order, as one step_record would.
-- Each task row is a probe of the primary key, one per checkpoint, in id order (the sorted
-- subquery is not flattened, and the locking subquery runs once per row of it): a join of
-- the checkpoints with the task table would let the generic plan, when the statistics say
-- that few tasks are PENDING, read every PENDING row (or the whole table) and sort them.
WITH owned AS (
    SELECT s.*, ws.status AS task_status
    FROM (
        SELECT * FROM unnest(%(task_ids)b::text[], %(function_ids)b::int[], %(names)b::text[],
                             %(outputs)b::text[], %(errors)b::text[], %(serializations)b::text[],
                             %(started)b::bigint[], %(executors)b::text[], %(tokens)b::text[])
            AS u(task_id, function_id, function_name, output, error, serialization, started_at,
                 executor_id, claim_token)
        ORDER BY task_id
    ) AS s
    CROSS JOIN LATERAL (
        SELECT w.status FROM __schema__.workflow_status AS w
        WHERE w.workflow_uuid = s.task_id AND w.executor_id = s.executor_id
          AND (s.claim_token IS NULL OR w.claim_token = s.claim_token)
          AND w.status IN ('PENDING', 'CANCELLED')
        FOR SHARE
    ) AS ws
),
written AS (
    INSERT INTO __schema__.operation_outputs (
        workflow_uuid, function_id, function_name, output, error, serialization,
        started_at_epoch_ms, completed_at_epoch_ms, executor_id, claim_token)
    SELECT task_id, function_id, function_name, output, error, serialization, started_at,
           __now_ms__, executor_id, claim_token
    FROM owned
    ON CONFLICT (workflow_uuid, function_id) DO NOTHING
    RETURNING workflow_uuid, function_id
)
-- No join of the two CTEs (a nested loop over CTE scans is quadratic in the batch): the rows
-- written (task_status NULL), then the owned rows whose task no longer runs (cancelled).
SELECT workflow_uuid, function_id, NULL::text AS task_status FROM written
UNION ALL
SELECT task_id, function_id, task_status FROM owned WHERE task_status <> 'PENDING'

-- name: step_owners
-- Who holds existing checkpoint rows, and who runs their tasks now.
SELECT o.workflow_uuid, o.function_id, o.executor_id, o.claim_token,
       ws.status AS task_status, ws.executor_id AS task_executor, ws.claim_token AS task_token
FROM __schema__.operation_outputs AS o
JOIN unnest(%(task_ids)b::text[], %(function_ids)b::int[]) AS k(task_id, function_id)
  ON o.workflow_uuid = k.task_id AND o.function_id = k.function_id
JOIN __schema__.workflow_status AS ws ON ws.workflow_uuid = o.workflow_uuid

-- name: step_owner
SELECT o.executor_id, o.claim_token,
       ws.status AS task_status, ws.executor_id AS task_executor, ws.claim_token AS task_token
FROM __schema__.operation_outputs AS o
JOIN __schema__.workflow_status AS ws ON ws.workflow_uuid = o.workflow_uuid
WHERE o.workflow_uuid = %(task_id)s AND o.function_id = %(function_id)s

-- name: tasks_owned_by
-- The ownership reads due before the steps of many tasks, grouped by the checkpoint writer:
-- each row by its primary key only, compared with its owner by the caller (a filter on
-- status or executor_id could lead the generic plan to scan the PENDING tasks' index).
SELECT workflow_uuid, status, executor_id, claim_token FROM __schema__.workflow_status
WHERE workflow_uuid = ANY(%(task_ids)b::text[])

-- name: task_owned_by
SELECT 1 FROM __schema__.workflow_status
WHERE workflow_uuid = %(task_id)s AND status = 'PENDING' AND executor_id = %(executor_id)s
  AND (%(claim_token)s::text IS NULL OR claim_token = %(claim_token)s)

-- name: executor_get
SELECT * FROM __schema__.executors WHERE executor_id = %(executor_id)s

-- name: executor_upsert
INSERT INTO __schema__.executors (
    executor_id, hostname, pid, application_version, queues, started_at, last_heartbeat, lease_ms,
    details)
VALUES (%(executor_id)s, %(hostname)s, %(pid)s, %(version)s, %(queues)s,
        __now_ms__, __now_ms__, %(lease_ms)s, %(details)s)
ON CONFLICT (executor_id) DO UPDATE
SET hostname = EXCLUDED.hostname, pid = EXCLUDED.pid,
    application_version = EXCLUDED.application_version, queues = EXCLUDED.queues,
    started_at = EXCLUDED.started_at, last_heartbeat = EXCLUDED.last_heartbeat,
    lease_ms = EXCLUDED.lease_ms, details = EXCLUDED.details

-- name: executor_heartbeat
-- A heartbeat after a gap longer than the lease (an outage, a stalled process) also holds
-- this executor's recovery of others' tasks back for that gap plus one lease (recover_after):
-- their heartbeats lapsed in the same outage, and each renews only once it reconnects. One
-- statement with the renewal, so that no recovery round runs between the two.
UPDATE __schema__.executors
SET recover_after = CASE WHEN last_heartbeat < __now_ms__ - lease_ms
                         THEN 2 * __now_ms__ - last_heartbeat + lease_ms ELSE recover_after END,
    last_heartbeat = __now_ms__
WHERE executor_id = %(executor_id)s

-- name: executor_may_recover
-- Whether the executor may recover others' tasks now: its own lease is live (a round that
-- waited out an outage for a connection finds its heartbeat as old as theirs) and the hold
-- its heartbeat set after a gap is over. Read inside the recovery's transaction.
SELECT EXISTS (SELECT 1 FROM __schema__.executors
               WHERE executor_id = %(exclude)s AND last_heartbeat >= __now_ms__ - lease_ms
                 AND (recover_after IS NULL OR recover_after <= __now_ms__)) AS may

-- name: executor_delete
DELETE FROM __schema__.executors WHERE executor_id = %(executor_id)s

-- name: executor_report
UPDATE __schema__.executors SET details = %(details)s WHERE executor_id = %(executor_id)s

-- name: worker_command_send
INSERT INTO __schema__.worker_commands (command_id, executor_id, command, arguments, created_at)
VALUES (%(command_id)s, %(executor_id)s, %(command)s, %(arguments)s, __now_ms__)

-- name: worker_commands_pending
-- The commands sent to this worker in the last %(max_age_ms)s milliseconds that it has not
-- answered, oldest first (worker_commands_executor_idx).
SELECT * FROM __schema__.worker_commands
WHERE executor_id = %(executor_id)s AND created_at > __now_ms__ - %(max_age_ms)s::bigint
  AND reply IS NULL
ORDER BY created_at, command_id

-- name: worker_command_reply
UPDATE __schema__.worker_commands SET reply = %(reply)s, replied_at = __now_ms__
WHERE command_id = %(command_id)s

-- name: worker_command_get
SELECT * FROM __schema__.worker_commands WHERE command_id = %(command_id)s

-- name: worker_command_forget
DELETE FROM __schema__.worker_commands WHERE command_id = %(command_id)s

-- name: worker_commands_clear
-- A worker starting under its name forgets the commands sent to an earlier one (a shutdown
-- meant for it must not stop its successor), and every command older than an hour.
DELETE FROM __schema__.worker_commands
WHERE executor_id = %(executor_id)s OR created_at < __now_ms__ - 3600000

-- name: executors_list
SELECT * FROM __schema__.executors ORDER BY executor_id

-- name: tasks_recover_own
UPDATE __schema__.workflow_status
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts
                       THEN executor_id END,
    deduplication_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN NULL
                            ELSE deduplication_id END,
    updated_at = __now_ms__
WHERE status = 'PENDING' AND executor_id = %(executor_id)s
RETURNING workflow_uuid, status

-- name: executors_delete_stale
-- SKIP LOCKED: a stale row someone holds is dropped by a later round.
DELETE FROM __schema__.executors
WHERE executor_id IN (SELECT executor_id FROM __schema__.executors
                      WHERE last_heartbeat < __now_ms__ - COALESCE(%(lease_ms)s::bigint, lease_ms)
                      FOR UPDATE SKIP LOCKED)
  AND last_heartbeat < __now_ms__ - COALESCE(%(lease_ms)s::bigint, lease_ms)
RETURNING executor_id

-- name: executors_without_lease
-- Executors that hold PENDING tasks but have no live lease (their row is stale or gone).
-- A statement of its own: the UPDATE below is then fenced on these ids, so a task re-claimed
-- meanwhile by an executor this snapshot did not see is left alone.
SELECT DISTINCT ws.executor_id
FROM __schema__.workflow_status AS ws
WHERE ws.status = 'PENDING'
  AND ws.executor_id IS DISTINCT FROM %(exclude)s
  AND NOT EXISTS (
      SELECT 1 FROM __schema__.executors e
      WHERE e.executor_id = ws.executor_id
        AND e.last_heartbeat >= __now_ms__ - COALESCE(%(lease_ms)s::bigint, e.lease_ms))

-- name: tasks_recover_executors
UPDATE __schema__.workflow_status AS ws
SET status = CASE WHEN recovery_attempts > max_recovery_attempts
                  THEN 'MAX_RECOVERY_ATTEMPTS_EXCEEDED' ELSE 'ENQUEUED' END,
    executor_id = CASE WHEN recovery_attempts > max_recovery_attempts
                       THEN ws.executor_id END,
    deduplication_id = CASE WHEN recovery_attempts > max_recovery_attempts THEN NULL
                            ELSE ws.deduplication_id END,
    updated_at = __now_ms__
FROM (SELECT workflow_uuid FROM __schema__.workflow_status
      WHERE status = 'PENDING' AND executor_id = ANY(%(executors)b::text[])
      FOR UPDATE SKIP LOCKED) AS free
-- SKIP LOCKED: a row locked by a session that is cut off inside its transaction is left to a
-- later round (the server ends such a session: idle_in_transaction_session_timeout), instead
-- of blocking this executor's lease round, and with it its own heartbeat.
WHERE ws.workflow_uuid = free.workflow_uuid
  AND ws.status = 'PENDING' AND ws.executor_id = ANY(%(executors)b::text[])
RETURNING ws.workflow_uuid, ws.status

-- name: tasks_release_stray
-- SKIP LOCKED: a stray task someone holds is given back by a later round.
UPDATE __schema__.workflow_status AS ws
SET status = 'ENQUEUED', executor_id = NULL, updated_at = __now_ms__
FROM (SELECT workflow_uuid FROM __schema__.workflow_status
      WHERE status = 'PENDING' AND executor_id = %(executor_id)s
        AND started_at_epoch_ms < __now_ms__ - %(older_than_ms)s
        AND NOT (workflow_uuid = ANY(%(keep)b::text[]))
      FOR UPDATE SKIP LOCKED) AS free
WHERE ws.workflow_uuid = free.workflow_uuid
  AND ws.status = 'PENDING' AND ws.executor_id = %(executor_id)s
RETURNING ws.workflow_uuid

-- name: version_register
INSERT INTO __schema__.application_versions (version_id, version_name, version_timestamp, created_at)
VALUES (%(version_id)s, %(version_name)s, __now_ms__, __now_ms__)
ON CONFLICT (version_name) DO NOTHING

-- name: versions_list
SELECT version_name, version_timestamp FROM __schema__.application_versions
ORDER BY version_timestamp DESC, created_at DESC

-- name: now_ms
SELECT __now_ms__ AS now_ms

-- name: migrate_lock
SELECT pg_advisory_xact_lock(%(key)s)

-- name: schema_exists
SELECT to_regnamespace(%(schema)s) AS s

-- name: schema_create
CREATE SCHEMA IF NOT EXISTS __schema__

-- name: migrations_table_create
CREATE TABLE IF NOT EXISTS __schema__.pgtasks_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)

-- name: migrations_table_exists
SELECT to_regclass(%(table)s) AS t

-- name: migrations_versions
SELECT version FROM __schema__.pgtasks_migrations

-- name: migration_record
INSERT INTO __schema__.pgtasks_migrations VALUES (%(version)s, %(name)s, __now_ms__)

-- name: migrations_applied
SELECT version, name FROM __schema__.pgtasks_migrations ORDER BY version

-- =============================================================================================
-- Schedules (workflow_schedules; Python in schedules.py). last_fired_at and
-- active_since hold canonical UTC text (YYYY-MM-DDTHH:MM:SSZ), which sorts as time does.
-- =============================================================================================

-- name: schedule_upsert
-- A new schedule starts ACTIVE. A changed timing, or an INACTIVE schedule coming back, restarts
-- at active_since (nothing before it is backfilled); a PAUSED schedule stays paused. The SET
-- expressions read the row as it was before this update. A schedule belongs to its source:
-- a live row of another source is left alone (no row is returned, the caller reports it).
INSERT INTO __schema__.workflow_schedules AS s (
    schedule_id, schedule_name, workflow_name, schedule, cron_timezone, status, context,
    queue_name, last_fired_at, automatic_backfill, interval_seconds, cron_day_and, options,
    backfill_window_seconds, source, active_since, created_at, updated_at)
VALUES (%(schedule_id)s, %(name)s, %(task_name)s, %(schedule)s, %(timezone)s, 'ACTIVE', %(context)s,
        %(queue_name)s, NULL, %(automatic_backfill)s, %(interval_seconds)s, %(day_and)s, %(options)s,
        %(backfill_window_seconds)s, %(source)s, %(active_since)s, __now_ms__, __now_ms__)
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
          OR s.schedule IS DISTINCT FROM excluded.schedule
          OR s.cron_timezone IS DISTINCT FROM excluded.cron_timezone
          OR s.interval_seconds IS DISTINCT FROM excluded.interval_seconds
          OR s.cron_day_and IS DISTINCT FROM excluded.cron_day_and
        THEN excluded.active_since ELSE s.active_since END,
    status = CASE WHEN s.status = 'INACTIVE' THEN 'ACTIVE' ELSE s.status END,
    updated_at = __now_ms__
WHERE s.source = excluded.source OR s.status = 'INACTIVE'
RETURNING *

-- name: schedules_deactivate_missing
UPDATE __schema__.workflow_schedules
SET status = 'INACTIVE', updated_at = __now_ms__
WHERE source = %(source)s AND status <> 'INACTIVE' AND NOT (schedule_name = ANY(%(names)s::text[]))
RETURNING schedule_name

-- name: schedules_list
SELECT * FROM __schema__.workflow_schedules
WHERE (%(name)s::text IS NULL OR schedule_name = %(name)s::text)
  AND (cardinality(%(statuses)s::text[]) = 0 OR status = ANY(%(statuses)s::text[]))
ORDER BY schedule_name

-- name: schedule_set_status
-- Resuming restarts the cursor at active_since: the paused time is not backfilled.
UPDATE __schema__.workflow_schedules
SET active_since = CASE WHEN %(status)s::text = 'ACTIVE' AND status <> 'ACTIVE'
                        THEN %(active_since)s::text ELSE active_since END,
    status = %(status)s::text,
    updated_at = __now_ms__
WHERE schedule_name = %(name)s
RETURNING *

-- name: schedule_delete
DELETE FROM __schema__.workflow_schedules WHERE schedule_name = %(name)s

-- name: schedule_advance
-- The compare-and-set of a fire. A second scheduler racing on the same row waits for the
-- first one's transaction on the row lock, then re-reads the row: last_fired_at has moved, so
-- it updates nothing and inserts nothing.
UPDATE __schema__.workflow_schedules
SET last_fired_at = %(new_last_fired_at)s, updated_at = __now_ms__
WHERE schedule_name = %(name)s AND status = 'ACTIVE'
  AND last_fired_at IS NOT DISTINCT FROM %(expected_last_fired_at)s::text
  AND active_since IS NOT DISTINCT FROM %(expected_active_since)s::text
RETURNING schedule_name

-- name: schedule_latest_version
-- Scheduled tasks go to the newest registered version that has a live worker (a heartbeat
-- within its lease) serving the task's queue: a version being rolled out gets the fires as
-- soon as one of its workers serves the queue, and a rolled-back version, whose workers are
-- gone, gets none. With no such worker, the newest registered version.
SELECT v.version_name FROM __schema__.application_versions AS v
ORDER BY EXISTS (SELECT 1 FROM __schema__.executors AS e
                 WHERE e.application_version = v.version_name
                   AND e.last_heartbeat >= __now_ms__ - e.lease_ms
                   AND %(queue)s::text = ANY(string_to_array(e.queues, ','))) DESC,
         v.version_timestamp DESC, v.created_at DESC
LIMIT 1

-- =============================================================================================
-- Canvas links (task_links; Python in links.py). Every statement runs inside the transaction
-- of a canvas insert or of a parent's outcome.
-- =============================================================================================

-- name: task_set_waiting
UPDATE __schema__.workflow_status SET status = 'WAITING'
WHERE workflow_uuid = %(id)s AND status IN ('ENQUEUED', 'DELAYED')

-- name: task_set_has_links
UPDATE __schema__.workflow_status SET has_links = TRUE WHERE workflow_uuid = %(id)s

-- name: link_insert
INSERT INTO __schema__.task_links (parent_uuid, child_uuid, kind, position, prepend)
VALUES (%(parent)s, %(child)s, %(kind)s, %(position)s, %(prepend)s)
ON CONFLICT DO NOTHING

-- name: links_of_parent
-- Children in id order: two parents resolving links to the same children lock them in the
-- same order.
SELECT l.child_uuid, l.kind, l.prepend, p.serialization
FROM __schema__.task_links AS l JOIN __schema__.workflow_status AS p ON p.workflow_uuid = l.parent_uuid
WHERE l.parent_uuid = %(id)s AND l.kind <> 'group'
ORDER BY l.child_uuid, l.kind

-- name: task_lock
-- A chord's parents serialise here: the second waits for the first's commit, then counts it.
SELECT status, inputs, serialization FROM __schema__.workflow_status
WHERE workflow_uuid = %(id)s FOR UPDATE

-- name: link_done
UPDATE __schema__.task_links SET done = TRUE, result = %(result)s, result_serialization = %(tag)s
WHERE parent_uuid = %(parent)s AND child_uuid = %(child)s AND kind = %(kind)s

-- name: chord_waiting
-- (task_links_chord_waiting_idx: only the parents still to come are in the index.)
SELECT EXISTS (SELECT 1 FROM __schema__.task_links
               WHERE child_uuid = %(child)s AND kind = 'chord' AND NOT done) AS waiting

-- name: chord_results
SELECT result, result_serialization FROM __schema__.task_links
WHERE child_uuid = %(child)s AND kind = 'chord'
ORDER BY position

-- name: task_activate
UPDATE __schema__.workflow_status
SET parent_workflow_id = COALESCE(%(parent)s::text, parent_workflow_id),
    inputs = %(inputs)s, serialization = %(tag)s, updated_at = __now_ms__,
    status = CASE WHEN delay_until_epoch_ms > __now_ms__ THEN 'DELAYED' ELSE 'ENQUEUED' END
WHERE workflow_uuid = %(id)s AND status = 'WAITING'
RETURNING queue_name, status

-- name: task_end_waiting
UPDATE __schema__.workflow_status
SET status = %(status)s, error = %(error)s, end_reason = %(reason)s, deduplication_id = NULL,
    updated_at = __now_ms__
WHERE workflow_uuid = %(id)s AND status = 'WAITING'
RETURNING has_links

-- name: task_announce
SELECT pg_notify(%(channel)s, %(queue)s)

-- name: task_set_replaced
-- Task.replace: the running task waits for its replacement (fenced on its executor and run).
UPDATE __schema__.workflow_status SET status = 'WAITING', updated_at = __now_ms__
WHERE workflow_uuid = %(id)s AND status = 'PENDING' AND executor_id = %(executor)s
  AND (%(token)s::text IS NULL OR claim_token = %(token)s::text)
RETURNING workflow_uuid

-- name: task_end_replaced
UPDATE __schema__.workflow_status
SET status = 'SUCCESS', output = %(output)s, error = NULL, deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(id)s AND status = 'WAITING'
RETURNING has_links

-- name: link_delete_open
-- The open link of a chord header sent task by task (position -1: never among the results).
DELETE FROM __schema__.task_links
WHERE parent_uuid = %(parent)s AND child_uuid = %(child)s AND kind = 'chord' AND position = -1
RETURNING prepend

-- name: task_store_outcome
-- Celery's backend.store_result: a state written by hand, whatever the task's state was.
UPDATE __schema__.workflow_status
SET status = %(status)s, output = %(output)s, error = %(error)s, end_reason = NULL,
    deduplication_id = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(id)s
RETURNING has_links

-- name: chord_bodies_of_member
-- The chord bodies a header task counts towards (add_to_chord), in id order (locked so).
SELECT child_uuid, prepend FROM __schema__.task_links
WHERE parent_uuid = %(member)s AND kind = 'chord'
ORDER BY child_uuid

-- name: chord_link_append
-- One more header task for a chord (add_to_chord), after the last; the body's row is locked.
INSERT INTO __schema__.task_links (parent_uuid, child_uuid, kind, position, prepend)
SELECT %(parent)s, %(child)s, 'chord', COALESCE(MAX(position), -1) + 1, %(prepend)s
FROM __schema__.task_links WHERE child_uuid = %(child)s AND kind = 'chord'
ON CONFLICT DO NOTHING

-- name: task_outcome_lock
-- A task a canvas links from without inserting it (its id existed): its outcome, if any.
SELECT status, output, error FROM __schema__.workflow_status
WHERE workflow_uuid = %(id)s FOR UPDATE

-- name: group_members
SELECT child_uuid FROM __schema__.task_links
WHERE parent_uuid = %(group)s AND kind = 'group'
ORDER BY position

-- name: task_children
-- The tasks a task sent (parent_workflow_id) and those it hands its result to (links).
SELECT workflow_uuid AS child_uuid FROM __schema__.workflow_status WHERE parent_workflow_id = %(id)s
UNION
SELECT child_uuid FROM __schema__.task_links WHERE parent_uuid = %(id)s AND kind IN ('chain', 'chord')
ORDER BY child_uuid

-- name: task_children_many
-- task_children of several tasks in one statement (a page of Flower's /api/tasks): per id,
-- a probe of the parent_workflow_id index and one of the task_links primary key.
SELECT parent_workflow_id AS parent_uuid, workflow_uuid AS child_uuid FROM __schema__.workflow_status
WHERE parent_workflow_id = ANY(%(ids)b::text[])
UNION
SELECT parent_uuid, child_uuid FROM __schema__.task_links
WHERE parent_uuid = ANY(%(ids)b::text[]) AND kind IN ('chain', 'chord')
ORDER BY parent_uuid, child_uuid

-- name: task_links_around
-- Every link that ends or starts at one task (the canvas graph around it): the primary key
-- serves the first half, task_links_child_idx the second; the tasks it sent join as 'sent'.
SELECT parent_uuid, child_uuid, kind, position, done FROM __schema__.task_links WHERE parent_uuid = %(id)s
UNION ALL
SELECT parent_uuid, child_uuid, kind, position, done FROM __schema__.task_links WHERE child_uuid = %(id)s
UNION ALL
SELECT parent_workflow_id, workflow_uuid, 'sent', 0, status NOT IN ('ENQUEUED', 'DELAYED', 'PENDING')
FROM __schema__.workflow_status WHERE parent_workflow_id = %(id)s
ORDER BY 3, 4, 1, 2
LIMIT %(limit)s

-- name: task_event_set
-- A value published by a running task under a key (Celery's update_state uses 'state').
INSERT INTO __schema__.workflow_events (workflow_uuid, key, value, serialization)
SELECT %(id)s, %(key)s, %(value)s, %(tag)s
WHERE EXISTS (SELECT 1 FROM __schema__.workflow_status WHERE workflow_uuid = %(id)s)
ON CONFLICT (workflow_uuid, key) DO UPDATE SET value = excluded.value, serialization = excluded.serialization
RETURNING workflow_uuid

-- name: task_event_get
SELECT value, serialization FROM __schema__.workflow_events
WHERE workflow_uuid = %(id)s AND key = %(key)s

-- name: tasks_to_terminate
-- Tasks this executor runs that were revoked with terminate=True since.
SELECT s.workflow_uuid FROM __schema__.workflow_status AS s
JOIN __schema__.workflow_events AS e ON e.workflow_uuid = s.workflow_uuid AND e.key = 'terminate'
WHERE s.workflow_uuid = ANY(%(ids)s::text[]) AND s.status = 'CANCELLED'


-- fragment: prunable_tasks
-- Retention, the one definition of what pruning deletes (tasks_prune_pick deletes it in batches,
-- tasks_prunable counts it): finished tasks past the age of their queue: the queue's own
-- result_expires_sec where it has one (0: kept until deleted by hand), else %(older_than_ms)s
-- (NULL: kept); with %(per_queue)s false (an operator's explicit age) %(older_than_ms)s for
-- every queue. Dead letters stay (they wait to be resumed); so does a finished task a canvas
-- still needs (a link to a child that has not finished: a chain's next task, a chord body, a
-- callback). The walk goes through the created_at index, oldest first, below the smallest
-- age in force (created_at <= updated_at).
WITH ages AS (
    SELECT name, round(result_expires_sec * 1000)::bigint AS ms
    FROM __schema__.queues
    WHERE %(per_queue)s AND result_expires_sec IS NOT NULL
)
SELECT ws.workflow_uuid, ws.queue_name
FROM __schema__.workflow_status ws
LEFT JOIN ages a ON a.name = ws.queue_name
WHERE ws.created_at < __now_ms__ - (SELECT min(m) FROM (SELECT %(older_than_ms)s::bigint AS m
                                                   UNION ALL SELECT ms FROM ages WHERE ms > 0) AS f)
  AND ws.updated_at < __now_ms__ - CASE WHEN a.name IS NULL THEN %(older_than_ms)s::bigint
                                        WHEN a.ms > 0 THEN a.ms END
  AND ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED')
  AND (%(queue)s::text IS NULL OR ws.queue_name = %(queue)s)
  AND NOT EXISTS (
          SELECT 1 FROM __schema__.task_links l
          JOIN __schema__.workflow_status c ON c.workflow_uuid = l.child_uuid
          WHERE l.parent_uuid = ws.workflow_uuid
            AND c.status NOT IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'))

-- name: tasks_prune_pick
-- Up to %(limit)s of the oldest prunable tasks, locked for their deletion; SKIP LOCKED lets
-- workers prune side by side without waiting on each other or on a completion.
__prunable_tasks__
ORDER BY ws.created_at
LIMIT %(limit)s
FOR UPDATE OF ws SKIP LOCKED

-- name: tasks_prunable
-- What pruning would delete now, per queue (pgtasks prune --dry-run).
SELECT p.queue_name, count(*) AS n
FROM (
__prunable_tasks__
) AS p
GROUP BY p.queue_name

-- name: task_forget_pick
-- AsyncResult.forget(): one finished task, unless a canvas still needs it.
SELECT ws.workflow_uuid, ws.queue_name
FROM __schema__.workflow_status ws
WHERE ws.workflow_uuid = %(id)s
  AND ws.status IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')
  AND NOT EXISTS (
          SELECT 1 FROM __schema__.task_links l
          JOIN __schema__.workflow_status c ON c.workflow_uuid = l.child_uuid
          WHERE l.parent_uuid = ws.workflow_uuid
            AND c.status NOT IN ('SUCCESS', 'ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'))
FOR UPDATE OF ws

-- name: tasks_delete_finished
-- The picked tasks, with their steps, events and notifications (ON DELETE CASCADE).
DELETE FROM __schema__.workflow_status WHERE workflow_uuid = ANY(%(ids)s::text[])

-- name: task_links_delete_for
DELETE FROM __schema__.task_links
WHERE parent_uuid = ANY(%(ids)s::text[]) OR child_uuid = ANY(%(ids)s::text[])

-- =============================================================================================
-- Durable waiting (waiting.py; docs/waiting.md): sleeps, messages, events and streams.
-- =============================================================================================

-- name: wait_lock
-- Serializes a waiter's look-then-suspend with a sender's wake (pgtasks_wake takes the same
-- lock): a message or event committed after the look finds the task suspended and wakes it.
SELECT pg_advisory_xact_lock(hashtext('pgtasks.wait'), hashtext(%(wait_for)s))

-- name: task_suspend
-- The running task gives its slot back and waits as DELAYED until %(wake_at)s (the due timer
-- promotes it through workflow_status_delayed_idx, as any delayed task), its checkpoints kept.
-- Fenced like a checkpoint. A suspension ends an attempt cleanly: recovery_attempts starts
-- again, so a task may wait any number of times. It started, so it can no longer expire.
UPDATE __schema__.workflow_status
SET status = 'DELAYED', delay_until_epoch_ms = %(wake_at)s, wait_for = %(wait_for)s,
    executor_id = NULL, recovery_attempts = 0, expires_at_epoch_ms = NULL, updated_at = __now_ms__
WHERE workflow_uuid = %(task_id)s AND status = 'PENDING' AND executor_id = %(executor_id)s
  AND (%(claim_token)s::text IS NULL OR claim_token = %(claim_token)s)
RETURNING workflow_uuid

-- name: tasks_wake
SELECT __schema__.pgtasks_wake(%(wait_for)s, %(channel)s) AS n

-- name: message_insert
-- Idempotent by message id (the sender's idempotency key): a second send inserts nothing.
INSERT INTO __schema__.notifications (
    message_uuid, destination_uuid, topic, message, created_at_epoch_ms, serialization)
SELECT %(message_id)s, %(destination)s, %(topic)s, %(message)s, __now_ms__, %(serialization)s
WHERE EXISTS (SELECT 1 FROM __schema__.workflow_status WHERE workflow_uuid = %(destination)s)
ON CONFLICT (message_uuid) DO NOTHING
RETURNING message_uuid

-- name: message_oldest
-- One probe of notifications_unconsumed_idx, which holds only the messages not received.
SELECT message_uuid, message, serialization FROM __schema__.notifications
WHERE destination_uuid = %(task_id)s AND topic = %(topic)s AND NOT consumed
ORDER BY seq
LIMIT 1
FOR UPDATE

-- name: message_consume
UPDATE __schema__.notifications SET consumed = TRUE WHERE message_uuid = %(message_id)s

-- name: messages_of
SELECT message_uuid, topic, message, serialization, created_at_epoch_ms, consumed
FROM __schema__.notifications WHERE destination_uuid = %(task_id)s
ORDER BY seq

-- name: event_history_insert
INSERT INTO __schema__.workflow_events_history (workflow_uuid, function_id, key, value, serialization)
VALUES (%(id)s, %(function_id)s, %(key)s, %(value)s, %(tag)s)
ON CONFLICT (workflow_uuid, function_id) DO NOTHING

-- name: event_announce
-- For readers outside a task waiting on get_event (LISTEN): delivered when the event commits.
SELECT pg_notify(%(channel)s, %(task_id)s) AS n

-- name: events_of
SELECT key, value, serialization, function_id FROM __schema__.workflow_events_history
WHERE workflow_uuid = %(task_id)s ORDER BY function_id

-- name: stream_append
-- The next position of the stream; the step's fence (recorded first, in this transaction)
-- keeps a second writer out, and the primary key would refuse a duplicate position.
INSERT INTO __schema__.streams (workflow_uuid, key, position, value, serialization, function_id)
SELECT %(task_id)s, %(key)s,
       COALESCE((SELECT max(position) + 1 FROM __schema__.streams
                 WHERE workflow_uuid = %(task_id)s AND key = %(key)s), 0),
       %(value)s, %(serialization)s, %(function_id)s
WHERE NOT EXISTS (SELECT 1 FROM __schema__.streams
                  WHERE workflow_uuid = %(task_id)s AND key = %(key)s AND function_id = %(function_id)s)

-- name: stream_read
SELECT position, value, serialization FROM __schema__.streams
WHERE workflow_uuid = %(task_id)s AND key = %(key)s AND position >= %(start)s
ORDER BY position
LIMIT %(limit)s

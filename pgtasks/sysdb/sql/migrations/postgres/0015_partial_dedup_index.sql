-- The deduplication index held an entry for every task, though only tasks sent with a
-- deduplication id can conflict (NULLs never do): every insert, and every update of a task
-- that is not HOT (the claim and the outcome change `status`, which the partial indexes
-- name), paid for an entry nobody reads (issue 16). ON CONFLICT DO NOTHING without a target
-- covers a partial unique index the same way.
DROP INDEX __schema__.workflow_status_dedup_idx;
CREATE UNIQUE INDEX workflow_status_dedup_idx
    ON __schema__.workflow_status (queue_name, deduplication_id)
    WHERE deduplication_id IS NOT NULL;

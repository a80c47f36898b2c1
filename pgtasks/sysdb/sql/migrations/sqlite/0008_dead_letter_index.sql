-- The dead letters, newest first: they are rare, so a walk of the created_at index would read
-- the whole history to find a page of them. Only dead-lettered rows enter this index.

CREATE INDEX workflow_status_dead_idx
    ON workflow_status (created_at)
    WHERE status = 'MAX_RECOVERY_ATTEMPTS_EXCEEDED';

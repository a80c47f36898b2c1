-- Flow control: task expiry, and the indexes that make the limits cheap to count.

ALTER TABLE workflow_status ADD COLUMN expires_at_epoch_ms INTEGER;

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

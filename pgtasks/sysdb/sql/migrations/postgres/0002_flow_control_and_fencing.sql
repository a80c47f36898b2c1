-- Flow control (task expiry, indexes that make the limits cheap to count) and fencing
-- (a token per claim, and each executor's own lease length).

ALTER TABLE __schema__.workflow_status ADD COLUMN expires_at_epoch_ms BIGINT;

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

-- A fresh token per claim: every write of a run is fenced on it, so an older run of the same
-- task on the same executor (cancelled and resumed, or recovered and re-claimed) writes nothing.
ALTER TABLE __schema__.workflow_status ADD COLUMN claim_token TEXT;
ALTER TABLE __schema__.operation_outputs ADD COLUMN claim_token TEXT;
-- Each executor's lease is judged by its own length, not by the sweeping worker's.
ALTER TABLE __schema__.executors ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT 30000;

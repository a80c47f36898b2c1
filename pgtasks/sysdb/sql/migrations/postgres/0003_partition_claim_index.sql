-- The partitioned claim finds the partition keys that have waiting tasks with a loose index
-- scan and probes each key in (priority, enqueue_seq) order, both on this index: its cost
-- follows the number of keys, not the size of the backlog.
CREATE INDEX workflow_status_partition_idx
    ON __schema__.workflow_status (queue_name, queue_partition_key, priority, enqueue_seq)
    WHERE status = 'ENQUEUED';

-- Durable waiting (issue 30; docs/waiting.md): a task that sleeps, waits for a message or
-- for another task's event gives its worker slot back and waits as DELAYED until its wake-up
-- time. wait_for says what else wakes it early: 'message:<task id>:<topic>' or
-- 'event:<task id>:<key>' (NULL: only its time). Only tasks waiting that way have an entry.
ALTER TABLE __schema__.workflow_status ADD COLUMN wait_for TEXT;
CREATE INDEX workflow_status_wait_for_idx
    ON __schema__.workflow_status (wait_for)
    WHERE wait_for IS NOT NULL;

-- Messages: received oldest first (seq), each consumed once. The partial index holds only
-- the messages still to be received, so a receive is one probe however many were consumed.
ALTER TABLE __schema__.notifications ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY;
CREATE INDEX notifications_unconsumed_idx
    ON __schema__.notifications (destination_uuid, topic, seq)
    WHERE NOT consumed;
-- A producer (no UPDATE privilege) may send a message; it cannot consume one.
DROP POLICY pgtasks_insert ON __schema__.notifications;
CREATE POLICY pgtasks_insert ON __schema__.notifications FOR INSERT WITH CHECK (
    has_table_privilege('__schema__.notifications'::regclass, 'UPDATE') OR NOT consumed);

-- Every value a task set under a key, by the step that set it (workflow_events keeps the last).
CREATE TABLE __schema__.workflow_events_history (
    workflow_uuid TEXT NOT NULL
        REFERENCES __schema__.workflow_status (workflow_uuid) ON DELETE CASCADE,
    function_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    serialization TEXT NOT NULL DEFAULT 'json',
    PRIMARY KEY (workflow_uuid, function_id)
);

-- Streams: values a task appends under a key, read in order from anywhere; a row without a
-- value closes the stream.
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

-- Roles that mean what they say (issue 17; docs/security.md). Row-level security, which the
-- tables' owner (the role that migrates) bypasses: a deployment with one role that owns
-- everything pays nothing. For the other roles (`pgtasks roles`), every row stays readable
-- and changeable as their table privileges allow, but:
-- - a new row of workflow_status by a role that may not UPDATE it (the producer) must be a
--   task waiting to run: ENQUEUED or DELAYED, no outcome, no executor, no attempts. A
--   producer cannot forge a SUCCESS row that a later genuine enqueue would return;
-- - a new row of any other table needs the UPDATE privilege on it, which the producer
--   lacks: no step records, events, schedules, versions, queues, executors or links;
-- - nobody but the owner writes pgtasks_migrations (a forged row 999 would stop every
--   process from starting).
-- The privilege test is has_table_privilege(), a cached catalog lookup per inserted row.

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
CREATE POLICY pgtasks_insert ON __schema__.notifications FOR INSERT WITH CHECK (has_table_privilege('__schema__.notifications'::regclass, 'UPDATE'));

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

ALTER TABLE __schema__.pgtasks_migrations ENABLE ROW LEVEL SECURITY;
CREATE POLICY pgtasks_read ON __schema__.pgtasks_migrations FOR SELECT USING (true);

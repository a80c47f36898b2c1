-- Autovacuum for tables that churn (issue 16). Every task row is inserted, updated at its
-- claim and at its outcome, and deleted by retention a day after it finished; its steps and
-- events are inserted and deleted with it. PostgreSQL's defaults vacuum a table once 20% of
-- it is dead: on a table holding a day of history (millions of rows) that lets millions of
-- dead tuples, and dead entries at the head of the claim's partial index, pile up between
-- runs, and every claim walks over them. At 1% (plus 1,000 rows) vacuum runs often, in
-- small cheap passes, and the claim index stays close to the live backlog.
--
-- fillfactor stays at 100: the claim and the outcome change `status`, which the partial
-- indexes' predicates name, so those updates are never HOT and free space kept on each page
-- for them would only make the table bigger.
ALTER TABLE __schema__.workflow_status SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE __schema__.operation_outputs SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);
ALTER TABLE __schema__.workflow_events SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05
);

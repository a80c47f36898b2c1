-- Why a task ended without its own outcome (records.EndReason: EXPIRED, CANCELLED,
-- DEPENDENCY_FAILED, NOT_NEEDED); NULL when its worker wrote the outcome. Callers tell an
-- expired task from a cancelled one by this column, never by the error text.

ALTER TABLE workflow_status ADD COLUMN end_reason TEXT;

-- Schedules: interval schedules, Celery's crontab day rule, the fired tasks' options, the
-- backfill window, where a schedule came from (beat_schedule or the API) and when it became
-- active (created, changed or resumed: the scheduler never backfills before that).

ALTER TABLE workflow_schedules ADD COLUMN interval_seconds INTEGER;
ALTER TABLE workflow_schedules ADD COLUMN cron_day_and INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflow_schedules ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE workflow_schedules ADD COLUMN backfill_window_seconds INTEGER NOT NULL DEFAULT 86400;
ALTER TABLE workflow_schedules ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
ALTER TABLE workflow_schedules ADD COLUMN active_since TEXT;
ALTER TABLE workflow_schedules ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflow_schedules ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;

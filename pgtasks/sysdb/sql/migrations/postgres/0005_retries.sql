-- Retries: how many times a task asked to run again (Celery's request.retries). A retry is a
-- completion that sends the task back to the queue under the same id, from scratch.

ALTER TABLE __schema__.workflow_status ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;

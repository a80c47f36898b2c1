-- A paused queue keeps its tasks but no worker claims from it until it is resumed. Every claim
-- reads the flag, so a pause holds from the moment it commits.

ALTER TABLE queues ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;

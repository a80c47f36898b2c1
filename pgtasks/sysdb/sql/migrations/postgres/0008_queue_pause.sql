-- A paused queue keeps its tasks but no worker claims from it until it is resumed. Every claim
-- statement reads the flag (one probe of the queues name index per queue), so a pause holds
-- from the moment it commits.

ALTER TABLE __schema__.queues ADD COLUMN paused BOOLEAN NOT NULL DEFAULT FALSE;

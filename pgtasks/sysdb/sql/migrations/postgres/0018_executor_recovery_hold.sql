-- After a gap in its heartbeats longer than its lease (an outage, a stalled process), an
-- executor holds back its recovery of others' tasks until recover_after (database time, ms):
-- their heartbeats lapsed in the same outage, and each renews only once it reconnects. Set
-- by the heartbeat itself, so that no recovery round runs between the renewal and the hold.

ALTER TABLE __schema__.executors ADD COLUMN recover_after BIGINT;

-- What each worker reports about itself for `inspect` (issue 19): the tasks it registered,
-- its pool and concurrency, as JSON written when it starts. The replies describe the worker
-- as it runs, never the process that asks.

ALTER TABLE __schema__.executors ADD COLUMN details TEXT;

-- What each worker reports about itself for `inspect` (issue 19): the tasks it registered,
-- its pool and concurrency, as JSON written when it starts.

ALTER TABLE executors ADD COLUMN details TEXT;

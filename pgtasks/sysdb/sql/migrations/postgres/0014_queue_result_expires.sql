-- Per-queue retention (issue 16): how long the finished tasks of a queue are kept, in
-- seconds. NULL: the app's result_expires; 0: kept until deleted by hand.
ALTER TABLE __schema__.queues ADD COLUMN result_expires_sec DOUBLE PRECISION;

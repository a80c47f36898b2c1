-- Who set a queue's running values (issue 17): the app's last declaration (app.queue(...),
-- written by a starting worker) as JSON, and the columns an operator set since
-- (`pgtasks queue set`, a JSON list). A starting worker leaves an operator's value alone
-- unless the app's declared value of that column changed (sysdb/queues.py).

ALTER TABLE __schema__.queues ADD COLUMN declared TEXT;
ALTER TABLE __schema__.queues ADD COLUMN operator_set TEXT NOT NULL DEFAULT '[]';

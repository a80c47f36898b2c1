"""``pgtasks import-celery``, a migration tool: the messages a Celery deployment left in its
Redis broker become pgtasks tasks. command.py is the command, messages.py reads Celery's
message protocol, redis_wire.py speaks just enough Redis (no client dependency)."""

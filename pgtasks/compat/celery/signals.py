"""``celery.signals``: Celery's signals, with Celery's senders and arguments.

Each is a :class:`~pgtasks.compat.celery.utils.dispatch.signal.Signal`: connect with
``@task_success.connect`` or ``@task_success.connect(sender=...)``.

Where they fire in pgtasks: the publish signals in ``apply_async``/``send_task`` (the caller's
process); the task signals in the process running the task; the worker and logging signals
in ``pgtasks worker`` of a Celery app; ``beat_init`` in ``pgtasks beat`` and
``beat_embedded_init`` in ``pgtasks worker -B`` of a Celery app.
"""

from __future__ import annotations

from pgtasks.compat.celery.utils.dispatch.signal import Signal

before_task_publish = Signal(
    "before_task_publish",
    {"body", "exchange", "routing_key", "headers", "properties", "declare", "retry_policy"},
)
after_task_publish = Signal("after_task_publish", {"body", "exchange", "routing_key"})
task_received = Signal("task_received", {"request"})
task_prerun = Signal("task_prerun", {"task_id", "task", "args", "kwargs"})
task_postrun = Signal("task_postrun", {"task_id", "task", "args", "kwargs", "retval"})
task_success = Signal("task_success", {"result", "runtime"})
task_retry = Signal("task_retry", {"request", "reason", "einfo"})
task_failure = Signal("task_failure", {"task_id", "exception", "args", "kwargs", "traceback", "einfo"})
task_internal_error = Signal(
    "task_internal_error", {"task_id", "args", "kwargs", "request", "exception", "traceback", "einfo"}
)
task_revoked = Signal("task_revoked", {"request", "terminated", "signum", "expired"})
task_rejected = Signal("task_rejected", {"message", "exc"})
task_unknown = Signal("task_unknown", {"message", "exc", "name", "id"})
task_sent = Signal("task_sent", {"task_id", "task", "args", "kwargs", "eta", "taskset"})
celeryd_init = Signal("celeryd_init", {"instance", "conf", "options"})
celeryd_after_setup = Signal("celeryd_after_setup", {"instance", "conf"})
import_modules = Signal("import_modules")
worker_init = Signal("worker_init")
worker_before_create_process = Signal("worker_before_create_process")
worker_process_init = Signal("worker_process_init")
worker_process_shutdown = Signal("worker_process_shutdown")
worker_ready = Signal("worker_ready")
worker_shutdown = Signal("worker_shutdown")
worker_shutting_down = Signal("worker_shutting_down")
heartbeat_sent = Signal("heartbeat_sent")
setup_logging = Signal("setup_logging", {"loglevel", "logfile", "format", "colorize"})
after_setup_logger = Signal("after_setup_logger", {"logger", "loglevel", "logfile", "format", "colorize"})
after_setup_task_logger = Signal(
    "after_setup_task_logger", {"logger", "loglevel", "logfile", "format", "colorize"}
)
beat_init = Signal("beat_init")
beat_embedded_init = Signal("beat_embedded_init")
eventlet_pool_started = Signal("eventlet_pool_started")
eventlet_pool_preshutdown = Signal("eventlet_pool_preshutdown")
eventlet_pool_postshutdown = Signal("eventlet_pool_postshutdown")
eventlet_pool_apply = Signal("eventlet_pool_apply", {"target", "args", "kwargs"})
user_preload_options = Signal("user_preload_options", {"app", "options"})

__all__ = [name for name, value in list(globals().items()) if isinstance(value, Signal)] + ["Signal"]

"""Signals and task hooks, written only against Celery's public API."""

from __future__ import annotations

import os
import subprocess

from celery import Celery, Task
from celery.exceptions import Ignore, Reject
from celery.loaders.app import AppLoader
from celery.signals import (
    after_setup_logger,
    after_task_publish,
    beat_embedded_init,
    beat_init,
    before_task_publish,
    import_modules,
    task_failure,
    task_postrun,
    task_prerun,
    task_received,
    task_rejected,
    task_retry,
    task_revoked,
    task_success,
    task_unknown,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)

from tests.compat.apps.ledger import note


class LedgerLoader(AppLoader):
    """A custom loader (``Celery(loader=...)``): the worker calls its hooks."""

    def on_worker_init(self):
        note("loader on_worker_init")

    def on_worker_process_init(self):
        note("loader on_worker_process_init")

    def on_task_init(self, task_id, task):
        note("loader on_task_init", task_id)

    def on_process_cleanup(self):
        note("loader on_process_cleanup")

    def on_worker_shutdown(self):
        note("loader on_worker_shutdown")


app = Celery("signals", broker=os.environ.get("PGTASKS_DATABASE_URL"), loader=LedgerLoader)


class AuditStep:
    """A custom worker bootstep (Celery's subclass celery.bootsteps.StartStopStep, which
    celery-check would report): pgtasks names it and runs none."""


app.steps["worker"].add(AuditStep)


@import_modules.connect
def on_import_modules(sender=None, **kwargs):
    note("signal import_modules", sender.main)


class Hooked(Task):
    def before_start(self, task_id, args, kwargs):
        note("hook before_start", task_id)

    def on_success(self, retval, task_id, args, kwargs):
        note("hook on_success", task_id, retval)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        note("hook on_failure", task_id, type(exc).__name__, "einfo" if "Traceback" in str(einfo) else "-")

    def on_retry(self, exc, task_id, args, kwargs, einfo):
        note("hook on_retry", task_id, type(exc).__name__)

    def after_return(self, status, retval, task_id, args, kwargs, einfo):
        note("hook after_return", task_id, status, einfo)


@app.task(base=Hooked)
def double(x):
    return 2 * x


@app.task(base=Hooked)
def broken():
    raise ValueError("broken")


class OwnBaseException(BaseException):
    pass


@app.task(bind=True)
def fails_by_hand(self):
    # the documented way to end with a state of one's own: update_state, then Ignore
    meta = {"exc_type": "ValueError", "exc_message": ["stored by hand"], "custom": 1}
    self.update_state(state="FAILURE", meta=meta)
    raise Ignore()


@app.task(bind=True)
def succeeds_by_hand(self):
    self.update_state(state="SUCCESS", meta={"stored": "by hand"})
    raise Ignore()


@app.task(base=Hooked)
def forks():
    child = os.fork()
    if child == 0:
        return "child"  # a forked child returning from the task: it exits before any handler
    _, status = os.waitpid(child, 0)
    return ["parent", os.waitstatus_to_exitcode(status)]


@app.task(base=Hooked)
def rejects():
    raise Reject("nope", requeue=False)


@app.task(base=Hooked)
def exits():
    raise SystemExit(3)


@app.task(base=Hooked)
def raises_base_exception():
    raise OwnBaseException("b")


@app.task(base=Hooked, bind=True, default_retry_delay=0, max_retries=1)
def retried(self):
    if self.request.retries == 0:
        raise self.retry(exc=OSError("again"))
    return "done"


@app.task(base=Hooked)
def unencodable():
    return object()  # JSON cannot store it: Celery's backend fails the task with EncodeError


@app.task(ignore_result=True, store_errors_even_if_ignored=True)
def failing_but_kept():
    raise ValueError("kept")


@app.task(ignore_result=True)
def failing_and_ignored():
    raise ValueError("not kept")


@app.task
def failing_command():
    # a class of a module the caller has imported, though no task is defined there
    raise subprocess.CalledProcessError(3, ["false"])


@app.task(bind=True, max_retries=1)
def retry_without_reason(self):
    raise self.retry(countdown=300)


@worker_init.connect
def on_worker_init(sender=None, **kwargs):
    note("signal worker_init", sender.app.main)


@worker_ready.connect
def on_worker_ready(sender=None, **kwargs):
    note("signal worker_ready")


@worker_process_init.connect
def on_worker_process_init(**kwargs):
    note("signal worker_process_init", os.getpid())


@worker_shutdown.connect
def on_worker_shutdown(sender=None, **kwargs):
    note("signal worker_shutdown")


@beat_init.connect
def on_beat_init(sender=None, **kwargs):
    note("signal beat_init", type(sender).__name__)


@beat_embedded_init.connect
def on_beat_embedded_init(sender=None, **kwargs):
    note("signal beat_embedded_init", type(sender).__name__)


@after_setup_logger.connect
def on_after_setup_logger(logger=None, loglevel=None, **kwargs):
    note("signal after_setup_logger", loglevel)


@task_received.connect
def on_received(sender=None, request=None, **kwargs):
    note("signal task_received", request.id, request.name, request.replaced_task_nesting, list(request.args))


@task_prerun.connect
def on_prerun(sender=None, task_id=None, task=None, args=None, kwargs=None, **extra):
    note("signal task_prerun", task_id, sender.name, task is sender, list(args))


@task_postrun.connect
def on_postrun(sender=None, task_id=None, retval=None, state=None, **extra):
    note("signal task_postrun", task_id, state)


@task_success.connect(sender=double)
def on_double_success(sender=None, result=None, runtime=None, **kwargs):
    note("signal task_success", sender.request.id, result, type(runtime).__name__, runtime >= 0)


@task_failure.connect
def on_failure(sender=None, task_id=None, exception=None, einfo=None, **kwargs):
    note("signal task_failure", task_id, type(exception).__name__)


@task_rejected.connect
def on_rejected(sender=None, message=None, exc=None, **kwargs):
    note("signal task_rejected", type(exc).__name__)


@task_retry.connect
def on_retry(sender=None, request=None, reason=None, **kwargs):
    note("signal task_retry", request.id, type(reason).__name__)


@before_task_publish.connect
def on_before_publish(sender=None, headers=None, routing_key=None, body=None, **kwargs):
    note("signal before_task_publish", sender, headers["id"], routing_key, list(body[0]))


@after_task_publish.connect
def on_after_publish(sender=None, headers=None, routing_key=None, **kwargs):
    note("signal after_task_publish", sender, headers["id"], routing_key)


@task_revoked.connect
def on_task_revoked(sender=None, request=None, terminated=None, signum=None, expired=None, **kwargs):
    note("signal task_revoked", sender.name if sender else None, request.id, terminated, expired)


@task_unknown.connect
def on_task_unknown(sender=None, message=None, exc=None, name=None, id=None, **kwargs):
    note("signal task_unknown", name, id, type(exc).__name__, isinstance(exc, KeyError), message)

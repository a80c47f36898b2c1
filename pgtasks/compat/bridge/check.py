"""``pgtasks celery-check -A proj``: every Celery setting and feature the application uses
that pgtasks ignores or does not support, with what to do instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgtasks.compat.bridge.configuration import unused_result_serializer
from pgtasks.compat.bridge.django_beat import uses_django_beat
from pgtasks.compat.bridge.refused import imported_refused
from pgtasks.compat.celery import signals
from pgtasks.compat.celery.app.defaults import CURRENT_NAMES
from pgtasks.compat.kombu.serialization import registered_serializers

if TYPE_CHECKING:
    from pgtasks.compat.celery.app.base import Celery

IGNORED = "ignored"
UNSUPPORTED = "not supported"

# Settings pgtasks reads and honours.
SUPPORTED = frozenset(
    {
        "broker_url",
        "task_default_queue",
        "task_routes",
        "task_serializer",
        "accept_content",
        "task_always_eager",
        "task_eager_propagates",
        "task_track_started",
        "timezone",
        "enable_utc",
        "beat_schedule",
        "include",
        "imports",
        "task_default_priority",
        "task_create_missing_queues",
        "worker_concurrency",
        "worker_pool",
        "task_time_limit",
        "task_soft_time_limit",
        "worker_max_tasks_per_child",
        "worker_prefetch_multiplier",
        "worker_disable_prefetch",
        "task_queues",
        "result_serializer",
        "task_annotations",
        "task_ignore_result",
        "task_store_eager_result",
        "task_store_errors_even_if_ignored",
        "task_allow_error_cb_on_chord_header",
        "task_inherit_parent_priority",
        "broker_connection_retry_on_startup",
        "worker_max_memory_per_child",
        "worker_soft_shutdown_timeout",
        "worker_hijack_root_logger",
        "worker_log_format",
        "worker_task_log_format",
        "worker_log_datefmt",
        "worker_task_log_datefmt",
        "worker_redirect_stdouts",
        "worker_redirect_stdouts_level",
        "result_expires",
        "result_extended",
    }
)
# Settings that change nothing on pgtasks, and why.
IGNORED_PREFIXES: dict[str, str] = {
    "result_": "results are stored in the pgtasks database",
    "broker_": "there is no message broker; the database is the queue",
    "redis_": "no Redis is used",
    "database_": "results are stored in the pgtasks database",
    "mongodb_": "no result backend is used",
    "cache_": "no result backend is used",
    "cassandra_": "no result backend is used",
    "s3_": "no result backend is used",
    "azureblockblob_": "no result backend is used",
    "elasticsearch_": "no result backend is used",
    "couchbase_": "no result backend is used",
    "arangodb_": "no result backend is used",
    "cosmosdbsql_": "no result backend is used",
    "gcs_": "no result backend is used",
    "riak_": "no result backend is used",
    "couchdb_": "no result backend is used",
    "filesystem_": "no result backend is used",
    "event_": "Celery events are not emitted",
    "task_default_exchange": "routing is by queue name only",
    "control_": "remote control uses the database",
}
IGNORED_SETTINGS: dict[str, str] = {
    "result_backend": (
        "results are stored in the pgtasks database (django-db and django-cache are also written, "
        "for django-celery-results: docs/celery-migration.md)"
    ),
    "task_acks_late": "a task is re-run after a crash whatever this says (durable execution)",
    "task_acks_on_failure_or_timeout": "outcomes are always recorded",
    "task_reject_on_worker_lost": "a task whose worker died is recovered (up to max_recovery_attempts)",
    "worker_send_task_events": "Celery events are not emitted",
    "task_send_sent_event": "no events",
    "task_compression": "rows are not compressed",
    "task_protocol": "no message protocol",
    "task_default_routing_key": "routing is by queue name only",
    "task_default_delivery_mode": "every task is durable",
    "worker_state_db": "state is in the database",
    "worker_enable_remote_control": "inspect/control read the database",
    "worker_direct": "no direct queues",
    "task_publish_retry": "sending is one INSERT",
    "task_publish_retry_policy": "sending is one INSERT",
    "beat_schedule_filename": "schedules are stored in the database",
    "beat_sync_every": "no schedule file",
    "task_create_missing_queue_type": "no broker queues",
    "task_create_missing_queue_exchange_type": "no exchanges",
    "task_default_queue_type": "no broker queues",
    "task_queue_max_priority": "priority is always honoured",
    "worker_cancel_long_running_tasks_on_connection_loss": "tasks keep running; their lease protects them",
    "worker_lost_wait": "recovery uses heartbeats",
    "worker_timer_precision": "no timer",
    "worker_deduplicate_successful_tasks": "a task id never runs twice",
    "beat_max_loop_interval": "the beat wakes every second",
    "beat_cron_starting_deadline": (
        "a beat fires the most recent due time it missed (automatic_backfill: every one), however old"
    ),
    "task_remote_tracebacks": "get() raises with local frames only; result.traceback has the task's",
    "worker_proc_alive_timeout": "prefork children fork from pgtasks' fork server (30 s to start)",
    "worker_enable_soft_shutdown_on_idle": "ETA tasks wait in the database, not in a worker",
    "worker_log_color": "the worker's lines are not coloured",
    "result_accept_content": "a result is read by its row's serialization tag, within accept_content",
}
UNSUPPORTED_SETTINGS: dict[str, str] = {
    "task_default_rate_limit": "rate limits are per queue and global: app.queue(name, rate_limit=...)",
    "worker_disable_rate_limits": "rate limits are per queue: `pgtasks queue set NAME --rate-limit none`",
    "worker_autoscaler": "use a fixed -c",
    "worker_pool_restarts": "no pool restarts",
    "beat_scheduler": (
        "pgtasks beat fires beat_schedule and django-celery-beat's DatabaseScheduler rows from the "
        "database (once across beats); other schedulers are not read"
    ),
    "security_key": "message signing is not supported",
    "security_certificate": "message signing",
    "security_cert_store": "message signing",
    "security_digest": "message signing",
    "security_key_password": "message signing",
    "worker_consumer": "no consumer blueprint",
    "worker_agent": "no agent",
}
# Signals pgtasks never sends (yet): a receiver connected to one never runs.
SILENT_SIGNALS = (
    signals.worker_before_create_process,
    signals.task_sent,
    signals.eventlet_pool_started,
    signals.eventlet_pool_preshutdown,
    signals.eventlet_pool_postshutdown,
    signals.eventlet_pool_apply,
)
TASK_OPTIONS: dict[str, tuple[str, str]] = {
    "rate_limit": (UNSUPPORTED, "rate limits are per queue and global: app.queue(name, rate_limit=...)"),
    "acks_late": (IGNORED, "a task is re-run after a crash whatever this says"),
    "reject_on_worker_lost": (IGNORED, "a task whose worker died is recovered"),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One setting or feature pgtasks ignores or does not support."""

    what: str
    status: str
    note: str


def _setting_finding(name: str, shown: str | None = None) -> Finding | None:
    if name in SUPPORTED or name not in CURRENT_NAMES:
        return None
    what = f"setting {name}" if shown in (None, name) else f"setting {shown} ({name})"
    if name in UNSUPPORTED_SETTINGS:
        return Finding(what, UNSUPPORTED, UNSUPPORTED_SETTINGS[name])
    if name in IGNORED_SETTINGS:
        return Finding(what, IGNORED, IGNORED_SETTINGS[name])
    for prefix, why in IGNORED_PREFIXES.items():
        if name.startswith(prefix):
            return Finding(what, IGNORED, why)
    return Finding(what, IGNORED, "not used by pgtasks")


def check_app(app: Celery) -> list[Finding]:
    """What ``app`` uses that pgtasks ignores or does not support, settings first: those set
    on ``app.conf`` and those read from ``config_from_object`` (Django's ``CELERY_*``), each
    named as the project wrote it."""
    # table(): explicit settings and every source's; only Celery's names are ever shown
    used = sorted(name for name in app.conf.table() if name in CURRENT_NAMES)
    if uses_django_beat(app):
        used = [name for name in used if name != "beat_scheduler"]  # supported: bridge/django_beat.py
    findings = [f for name in used if (f := _setting_finding(name, app.conf.origin(name))) is not None]
    # Modules the app imported that pgtasks only serves as NotImplementedError placeholders.
    refused = sorted(imported_refused().items())
    findings += [Finding(f"import {name}", UNSUPPORTED, why) for name, why in refused]
    serializer = str(app.conf.task_serializer)
    if serializer not in ("json", "pickle", "application/json"):
        findings.append(Finding(f"task_serializer {serializer!r}", UNSUPPORTED, "use 'json' (or 'pickle')"))
    unused = unused_result_serializer(app.conf)
    if unused is not None:
        findings.append(Finding("setting result_serializer", IGNORED, unused.split(": ", 1)[1]))
    for name in registered_serializers():
        findings.append(Finding(f"kombu serializer {name!r}", IGNORED, "pgtasks stores JSON (or pickle)"))
    for name, task in sorted(app.tasks.items()):
        for option, (status, note) in TASK_OPTIONS.items():
            value: Any = getattr(task, option, None)
            if value not in (None, False):
                findings.append(Finding(f"task {name}: {option}={value!r}", status, note))
    for signal in SILENT_SIGNALS:
        if signal.receivers:
            findings.append(Finding(f"signal {signal.name}", UNSUPPORTED, "pgtasks does not send it (yet)"))
    return findings


def report(findings: list[Finding]) -> str:
    """The findings as an aligned table, or a line saying there is nothing to report."""
    if not findings:
        return "pgtasks supports every Celery setting and feature this application uses."
    width = max(len(f.what) for f in findings)
    lines = [f"{f.what:<{width}}  {f.status:<13}  {f.note}" for f in findings]
    unsupported = sum(1 for f in findings if f.status == UNSUPPORTED)
    lines.append(
        f"\n{len(findings)} findings: {unsupported} not supported, {len(findings) - unsupported} ignored."
    )
    return "\n".join(lines)

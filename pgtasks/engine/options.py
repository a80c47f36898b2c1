"""Send options: the one type every sending path builds (:class:`SendOptions`), the engine's
per-task request, and their validation and conversion into a row to insert."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pgtasks.engine.errors import ConfigurationError
from pgtasks.engine.ids import new_task_id, new_task_ids
from pgtasks.engine.serialization import Codec
from pgtasks.engine.settings import check_key_length, check_name_length, validate_queue_name
from pgtasks.sysdb.records import NewTask

_CHILD_NAMESPACE = uuid.UUID("6f1c1b9e-7d0a-4d8e-9a53-3c2f1f8e2a11")
MAX_TASK_ID_LENGTH = 255
MAX_DELAY_SECONDS = 100 * 366 * 24 * 3600  # a century: keeps epoch milliseconds far inside BIGINT


@dataclass(frozen=True, slots=True)
class SendOptions:
    """How to send a task: what ``Task.apply_async``, ``Client.enqueue``/``App.send_task`` and
    ``Task.map_enqueue`` accept, spelled once. Build it with :meth:`from_kwargs`, which refuses
    an unknown option by name; the values are checked when the task is built
    (:func:`build_new_task`), so every path gives the same errors.

    ``task_id`` re-used: the existing task is returned, never run twice. ``countdown``
    (seconds) or ``eta`` (datetime; naive means UTC) keep it DELAYED. ``priority``: lower runs
    first. ``deduplication_id``: refused (DuplicateTaskError) while another unfinished task on
    the queue holds it, or with ``on_duplicate="return"`` the holder's handle is returned.
    ``partition_key``: on a partitioned queue, the concurrency limit applies per key.
    ``expires`` (seconds or datetime): not started by then, the task is cancelled unrun.
    ``max_recovery_attempts``: how many times recovery may restart it. ``conn``: a psycopg
    connection whose open transaction the insert joins. ``retries``: the retry count the task
    starts with (Celery's ``request.retries``; a task moved from a Celery broker keeps its own).
    """

    task_id: str | None = None
    queue: str | None = None
    countdown: float | None = None
    eta: dt.datetime | None = None
    priority: int = 0
    deduplication_id: str | None = None
    partition_key: str | None = None
    max_recovery_attempts: int | None = None
    expires: float | dt.datetime | None = None
    on_duplicate: str = "raise"
    conn: Any = None
    retries: int = 0

    @classmethod
    def from_kwargs(cls, **options: Any) -> SendOptions:
        """The options given as keywords; ConfigurationError names an unknown one and lists
        the known ones."""
        if not _SEND_OPTIONS.issuperset(options):
            unknown = sorted(set(options) - _SEND_OPTIONS)
            raise ConfigurationError(
                f"unknown send option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(SEND_OPTION_NAMES)}"
            )
        if options.get("on_duplicate", "raise") not in ("raise", "return"):
            raise ConfigurationError(
                f"on_duplicate must be 'raise' or 'return', not {options['on_duplicate']!r}"
            )
        return cls(**options)

    def with_defaults(self, **defaults: Any) -> SendOptions:
        """These options with ``defaults`` filling those left unset (None)."""
        unset = {k: v for k, v in defaults.items() if getattr(self, k) is None}
        return dataclasses.replace(self, **unset) if unset else self

    def request(
        self, name: str, args: Sequence[Any] | None = None, kwargs: dict[str, Any] | None = None
    ) -> EnqueueRequest:
        """The engine's request for one task ``name`` sent with these options."""
        try:
            if not isinstance(args, (str, bytes)):  # a sequence, but never meant as the arguments
                return EnqueueRequest(name, tuple(args or ()), dict(kwargs or {}), self)
        except (TypeError, ValueError):
            if isinstance(args, (list, tuple, type(None))):
                what = f"kwargs of task {name!r} must be a dict, not {type(kwargs).__name__}"
                raise TypeError(what) from None
        raise TypeError(f"args of task {name!r} must be a list or tuple, not {type(args).__name__}")


@dataclass(frozen=True, slots=True)
class EnqueueRequest:
    """One task as the engine inserts it: its name, arguments and :class:`SendOptions`, and
    the application version to pin it to (the scheduler pins fires to the newest version;
    senders leave it None), and the JSON ``meta`` stored with it (None: none). Build it with
    :meth:`SendOptions.request` or directly."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: SendOptions = SendOptions()
    application_version: str | None = None
    meta: str | None = None  # JSON stored with the task (a sender's extras: Celery's origin)


SEND_OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(SendOptions))
_SEND_OPTIONS = frozenset(SEND_OPTION_NAMES)


def check_priority(priority: object) -> int:
    """A task's priority: an integer of 32 bits (lower runs first), else ConfigurationError."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ConfigurationError(f"priority must be an integer, not {priority!r}")
    if not -(2**31) <= priority < 2**31:
        raise ConfigurationError(f"priority {priority} is out of range")
    return priority


def child_task_id(parent_id: str, function_id: int) -> str:
    """The deterministic id of a task sent from inside another, so a re-run sends it once."""
    return str(uuid.uuid5(_CHILD_NAMESPACE, f"{parent_id}:{function_id}"))


# Checked options by what they were checked from: a producer sends the same task with the same
# options over and over, and checking them is most of the work of building its row.
_CHECKED: dict[tuple[Any, ...], NewTask] = {}
_CHECKED_LIMIT = 1024  # distinct (task, options) pairs kept; past it the cache starts afresh
# The last options object checked and what it gave: the tasks of a bulk call share one, and
# recognising it by identity skips hashing its twelve fields for every task.
_last_checked: tuple[Any, str, str | None, str, int, NewTask | None] = ("", "", None, "", 0, None)


def build_new_task(
    request: EnqueueRequest,
    codec: Codec,
    default_queue: str,
    default_max_recovery_attempts: int,
    parent_task_id: str | None = None,
    *,
    max_payload_bytes: int | None = None,
) -> NewTask:
    """Check every option and serialize the arguments; raise with a precise message.

    ``max_payload_bytes``: refuse arguments larger than this once serialized
    (:class:`~pgtasks.engine.errors.PayloadTooLarge`)."""
    options = request.options
    checked = _checked_options(request, default_queue, default_max_recovery_attempts)
    task_id = new_task_id() if options.task_id is None else options.task_id
    if options.task_id is not None:
        if not isinstance(task_id, str) or not 0 < len(task_id) <= MAX_TASK_ID_LENGTH:
            raise ConfigurationError(f"task_id must be a string of 1 to {MAX_TASK_ID_LENGTH} characters")
        _check_text(task_id, "task_id")
    if not isinstance(request.args, (list, tuple)):
        raise ConfigurationError(f"args of task {request.name!r} must be a list or tuple")
    if not isinstance(request.kwargs, dict):
        raise ConfigurationError(f"kwargs of task {request.name!r} must be a dict")
    tag, inputs = codec.dumps_inputs(request.name, tuple(request.args), request.kwargs, max_payload_bytes)
    # Positional, in NewTask's field order: keywords cost twice as much on this hot path.
    return NewTask(
        task_id,
        checked.name,
        inputs,
        checked.queue_name,
        tag,
        checked.priority,
        checked.deduplication_id,
        checked.partition_key,
        checked.delay_ms,
        checked.delay_until_epoch_ms,
        checked.application_version,
        checked.max_recovery_attempts,
        parent_task_id,
        checked.expires_at_epoch_ms,
        checked.expires_in_ms,
        request.meta,
        checked.retries,
    )


def build_new_tasks(
    name: str,
    arg_lists: Sequence[Sequence[Any] | None],
    options: SendOptions,
    codec: Codec,
    default_queue: str,
    default_max_recovery_attempts: int,
    *,
    max_payload_bytes: int | None = None,
) -> list[NewTask]:
    """The rows :func:`build_new_task` gives for one task ``name`` per argument list, all sent
    with ``options`` (which carry no task id), without a request per task: the options are
    checked once, the ids drawn together, and each row is its id, its serialized arguments
    and the fields the tasks share."""
    if options.task_id is not None:
        raise ConfigurationError("tasks built from one options object cannot share its task_id")
    checked = _checked_options(
        EnqueueRequest(name, options=options), default_queue, default_max_recovery_attempts
    )
    checked_name, queue = checked.name, checked.queue_name
    shared = (*checked[5:12], None, *checked[13:15], None, checked.retries)  # priority .. retries
    dumps = codec.dumps_inputs
    rows = []
    for task_id, args in zip(new_task_ids(len(arg_lists)), arg_lists, strict=True):
        tag, inputs = dumps(name, tuple(args or ()), {}, max_payload_bytes)
        # tuple.__new__: the named tuple's own __new__ (a Python function) costs twice as much.
        rows.append(tuple.__new__(NewTask, (task_id, checked_name, inputs, queue, tag, *shared)))
    return rows


def _checked_options(
    request: EnqueueRequest, default_queue: str, default_max_recovery_attempts: int
) -> NewTask:
    """The row's fields that come from the name and the options (task id and inputs left
    empty), checked; cached for options without a task id or a connection (those change
    from call to call, and a connection is not kept alive by a cache)."""
    global _last_checked
    options = request.options
    last_options, name, version, queue, attempts, checked = _last_checked
    if (
        options is last_options
        and request.name == name
        and request.application_version == version
        and default_queue == queue
        and default_max_recovery_attempts == attempts
        and checked is not None
    ):
        return checked
    if options.task_id is None and options.conn is None:
        # The types too: True == 1, but priority=True is refused where priority=1 is not.
        key = (
            request.name,
            request.application_version,
            options,
            default_queue,
            default_max_recovery_attempts,
            type(options.priority),
            type(options.countdown),
            type(options.max_recovery_attempts),
            type(options.retries),
            type(options.expires),
        )
        try:
            checked = _CHECKED.get(key)
        except TypeError:  # an option of an unhashable type: checked (and refused) here
            return _check_options(request, default_queue, default_max_recovery_attempts)
        if checked is None:
            checked = _check_options(request, default_queue, default_max_recovery_attempts)
            if len(_CHECKED) >= _CHECKED_LIMIT:
                _CHECKED.clear()
            _CHECKED[key] = checked
        _last_checked = (
            options,
            request.name,
            request.application_version,
            default_queue,
            default_max_recovery_attempts,
            checked,
        )
        return checked
    return _check_options(request, default_queue, default_max_recovery_attempts)


def _check_options(
    request: EnqueueRequest, default_queue: str, default_max_recovery_attempts: int
) -> NewTask:
    options = request.options
    if not isinstance(request.name, str) or not request.name:
        raise ConfigurationError(f"task name must be a non-empty string, not {request.name!r}")
    _check_text(request.name, "task name")
    check_name_length(request.name, "task name")
    for what, value in (
        ("deduplication_id", options.deduplication_id),
        ("partition_key", options.partition_key),
        ("application_version", request.application_version),
    ):
        if value is not None:
            if not isinstance(value, str):
                raise ConfigurationError(f"{what} must be a string, not {type(value).__name__}")
            _check_text(value, what)
            if what == "application_version":
                check_name_length(value, what)
            else:
                check_key_length(value, what)
    if options.countdown is not None and options.eta is not None:
        raise ConfigurationError(
            f"countdown={options.countdown!r} and eta={options.eta!r} both given: give one (which "
            "would win is a guess)"
        )
    check_priority(options.priority)
    retries = options.retries
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries < 2**31:
        raise ConfigurationError(f"retries must be an integer >= 0, not {options.retries!r}")
    max_attempts = options.max_recovery_attempts
    if max_attempts is None:
        max_attempts = default_max_recovery_attempts
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 0 <= max_attempts < 2**31:
        raise ConfigurationError(
            f"max_recovery_attempts must be an integer from 0 to {2**31 - 1}, not {max_attempts!r}"
        )
    return NewTask(
        task_id="",
        name=request.name,
        inputs="",
        serialization="",
        queue_name=validate_queue_name(default_queue if options.queue is None else options.queue),
        priority=options.priority,
        deduplication_id=options.deduplication_id,
        partition_key=options.partition_key,
        delay_ms=_countdown_ms(options.countdown),
        delay_until_epoch_ms=_eta_ms(options.eta),
        application_version=request.application_version,
        max_recovery_attempts=max_attempts,
        expires_at_epoch_ms=(
            _eta_ms(options.expires, "expires") if isinstance(options.expires, dt.datetime) else None
        ),
        expires_in_ms=(
            None if isinstance(options.expires, dt.datetime) else _countdown_ms(options.expires, "expires")
        ),
        retries=options.retries,
    )


def _check_text(value: str, what: str) -> None:
    """Refuse what no database column can hold the same way: PostgreSQL rejects NUL in text
    (SQLite would store it), and a lone surrogate cannot be encoded as UTF-8 at all."""
    if "\x00" in value:
        raise ConfigurationError(f"{what} {value!r} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError(f"{what} {value!r} is not valid Unicode (a lone surrogate)") from None


def _countdown_ms(countdown: float | None, what: str = "countdown") -> int | None:
    if countdown is None:
        return None
    if isinstance(countdown, bool) or not isinstance(countdown, (int, float)):
        raise ConfigurationError(f"{what} must be a number of seconds, not {countdown!r}")
    if isinstance(countdown, float) and not math.isfinite(countdown):
        raise ConfigurationError(f"{what} must be a finite number of seconds, not {countdown!r}")
    if not 0 <= countdown <= MAX_DELAY_SECONDS:
        raise ConfigurationError(
            f"{what} must be between 0 and {MAX_DELAY_SECONDS} seconds, not {countdown!r}"
        )
    return round(countdown * 1000)


def _eta_ms(eta: dt.datetime | None, what: str = "eta") -> int | None:
    if eta is None:
        return None
    if not isinstance(eta, dt.datetime):
        raise ConfigurationError(f"{what} must be a datetime, not {type(eta).__name__}")
    if eta.tzinfo is None:
        eta = eta.replace(tzinfo=dt.timezone.utc)  # naive means UTC (documented)
    try:
        epoch_ms = round(eta.timestamp() * 1000)
    except (OverflowError, ValueError) as exc:
        raise ConfigurationError(f"{what} {eta!r} is out of range: {exc}") from exc
    if epoch_ms - time.time() * 1000 > MAX_DELAY_SECONDS * 1000:  # as countdown and expires
        raise ConfigurationError(
            f"{what} {eta.isoformat()} is more than {MAX_DELAY_SECONDS} seconds (a century) from now"
        )
    return epoch_ms

"""What must hold after any schedule of faults, and the instruments that prove it.

Three sources of truth, none of them the engine's own view of itself:

- **The effects ledger**: a file named by ``PGTASKS_TEST_LEDGER``. A step body calls
  :func:`effect` (one ``O_APPEND`` line per execution: it survives a SIGKILL right after the
  write, and it needs no database, so it works while PostgreSQL restarts); a task body may
  call :func:`span` at its start and end, to measure concurrency.
- **The status history**: :func:`install_history` adds a table and a trigger to the system
  database that record every status change of ``workflow_status`` (task id, old status, new
  status, executor, time), in the same transaction as the change.
- **The system database**: ``workflow_status`` and ``operation_outputs``.

Usage::

    install_history(url)                       # after the schema exists, before any worker
    ...                                        # enqueue, inject faults, let workers finish
    faulted = touched_by(url, t0, t1, "w1")    # tasks PENDING on w1 at some moment of [t0, t1]
    report = check(url, acknowledged, faulted_ids=faulted, limits={"limited": 2}, ledger=path)
    print(report.summary())                    # check() raised already if an invariant failed

:func:`check` asserts that every acknowledged enqueue reached exactly one terminal state;
that no task exists that nobody sent; that each task's checkpoints are numbered 1..n; that
each checkpointed step body ran exactly once, or at most ``1 + k`` times for a task listed
``k`` times in ``faulted_ids``; that no task started more than ``1 + max_recovery_attempts``
times; and that no queue of ``limits`` ran more tasks at once than its limit.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import psycopg

from pgtasks.engine.context import running_context
from pgtasks.engine.steps import OWNERSHIP_FRESH_SECONDS
from pgtasks.sysdb import open_system_database
from pgtasks.sysdb.records import TERMINAL_STATUSES
from pgtasks.sysdb.urls import DatabaseTarget, parse_database_url
from tests.support.ledger import Interval, append, max_overlap

TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)
HISTORY_TABLE = "fault_status_history"


# -- the effects ledger (written by step and task bodies in the workers) -------------------


def effect(label: str = "") -> None:
    """Record one execution of the current step's body: ``<task> effect <function_id> <label>
    <pid> <claim token> <time>`` (the last three say who ran it, for a failure's report).

    Call it from inside an ``@app.step`` body (the step's position is the one just taken)."""
    ctx = running_context()  # the engine's own context: the step counter, the claim token
    function_id = ctx.next_function_id - 1 if ctx else 0
    token = (ctx.record.claim_token or "-") if ctx else "-"
    append("effect", str(function_id), label or "-", str(os.getpid()), token, f"{time.time():.3f}")


def span(event: str) -> None:
    """Record the ``start`` or ``end`` of one execution of the current task body, with the
    queue and the claim token (unique per execution), for the concurrency check."""
    ctx = running_context()
    queue, token = (ctx.record.queue_name, ctx.record.claim_token or "-") if ctx else ("-", "-")
    append(event, f"{time.time():.6f}", queue, token)


class Execution(NamedTuple):
    """Who ran one step body, and when (``time.time()``)."""

    pid: str
    token: str  # the claim token it ran under
    at: float


@dataclass(frozen=True)
class Ledger:
    """What the step and task bodies wrote: executions per (task id, function id), and the
    executions of task bodies that reached their end (killed or abandoned ones have no end)."""

    effects: collections.Counter[tuple[str, int]]
    spans: list[tuple[str, Interval]]  # (claim token, execution)
    runs: dict[tuple[str, int], list[Execution]] = field(default_factory=dict)  # in the ledger's order


def read_ledger(path: Path) -> Ledger:
    effects: collections.Counter[tuple[str, int]] = collections.Counter()
    runs: dict[tuple[str, int], list[Execution]] = collections.defaultdict(list)
    starts: dict[str, tuple[str, float, str]] = {}
    spans = []
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        fields = line.split(" ")
        if len(fields) >= 3 and fields[1] == "effect":
            effects[(fields[0], int(fields[2]))] += 1
            if len(fields) == 7:
                runs[(fields[0], int(fields[2]))].append(Execution(fields[4], fields[5], float(fields[6])))
        elif len(fields) == 5 and fields[1] == "start":
            starts[fields[4]] = (fields[0], float(fields[2]), fields[3])
        elif len(fields) == 5 and fields[1] == "end" and fields[4] in starts:
            task_id, began, queue = starts.pop(fields[4])
            spans.append((fields[4], Interval(task_id, queue, began, float(fields[2]))))
    return Ledger(effects, spans, dict(runs))


# -- the status history (a trigger in the system database) -------------------------------

_PG_HISTORY = """
CREATE TABLE IF NOT EXISTS {s}.{h} (
    seq BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    old_status TEXT,
    new_status TEXT NOT NULL,
    executor_id TEXT,
    at_ms BIGINT NOT NULL,
    claim_token TEXT
);
CREATE OR REPLACE FUNCTION {s}.{h}_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO {s}.{h} (task_id, old_status, new_status, executor_id, at_ms, claim_token)
        VALUES (NEW.workflow_uuid, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status,
                NEW.executor_id, (extract(epoch FROM statement_timestamp()) * 1000)::bigint,
                NEW.claim_token);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS {h} ON {s}.workflow_status;
CREATE TRIGGER {h} AFTER INSERT OR UPDATE OF status ON {s}.workflow_status
    FOR EACH ROW EXECUTE FUNCTION {s}.{h}_record();
"""

_SQLITE_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
_SQLITE_HISTORY = f"""
CREATE TABLE IF NOT EXISTS {{h}} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    old_status TEXT,
    new_status TEXT NOT NULL,
    executor_id TEXT,
    at_ms INTEGER NOT NULL,
    claim_token TEXT
);
CREATE TRIGGER IF NOT EXISTS {{h}}_insert AFTER INSERT ON workflow_status BEGIN
    INSERT INTO {{h}} (task_id, old_status, new_status, executor_id, at_ms, claim_token)
    VALUES (NEW.workflow_uuid, NULL, NEW.status, NEW.executor_id, {_SQLITE_NOW_MS}, NEW.claim_token);
END;
CREATE TRIGGER IF NOT EXISTS {{h}}_update AFTER UPDATE OF status ON workflow_status
WHEN OLD.status IS NOT NEW.status BEGIN
    INSERT INTO {{h}} (task_id, old_status, new_status, executor_id, at_ms, claim_token)
    VALUES (NEW.workflow_uuid, OLD.status, NEW.status, NEW.executor_id, {_SQLITE_NOW_MS}, NEW.claim_token);
END;
"""


def install_history(database_url: str) -> None:
    """Create (or migrate) the system database, then add the status-history table and its
    trigger. Idempotent. Call it before the first task is enqueued."""
    sysdb = open_system_database(database_url)
    try:
        sysdb.migrate()
    finally:
        sysdb.close()
    target = parse_database_url(database_url)
    if target.dialect == "postgres":
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(_PG_HISTORY.format(s=f'"{target.schema}"', h=HISTORY_TABLE).encode())
    else:
        with contextlib.closing(sqlite3.connect(target.sqlite_path, timeout=30)) as conn:
            conn.executescript(_SQLITE_HISTORY.format(h=HISTORY_TABLE))


@dataclass(frozen=True)
class Transition:
    """One status change: ``old`` is None for the insert."""

    task_id: str
    old: str | None
    new: str
    executor_id: str | None
    at: float  # seconds since the epoch (database clock; the tests run on the same host)
    claim_token: str | None = None  # the task's claim token after the change


def status_history(database_url: str) -> list[Transition]:
    """Every recorded status change, oldest first ([] if the history was never installed)."""
    if not _has_history(database_url):
        return []
    rows = query(
        database_url,
        "SELECT task_id, old_status, new_status, executor_id, at_ms, claim_token FROM {h} ORDER BY seq",
    )
    return [Transition(r[0], r[1], r[2], r[3], r[4] / 1000, r[5]) for r in rows]


def touched_by(database_url: str, start: float, end: float, executor_id: str | None = None) -> set[str]:
    """Tasks that were PENDING (on ``executor_id``, or on any executor) at some moment of
    ``[start, end]`` (``time.time()`` values): those a fault in that window could touch."""
    return touched(status_history(database_url), start, end, executor_id)


def touched(history: list[Transition], start: float, end: float, executor_id: str | None = None) -> set[str]:
    """:func:`touched_by` over a history already read (to test many windows at once)."""
    start -= 0.001  # the history keeps milliseconds: a change in the window's first one counts
    found = set()
    running: dict[str, tuple[float, str | None]] = {}
    for change in history:
        began = running.pop(change.task_id, None)
        if began is not None and _overlaps(began, change.at, start, end, executor_id):
            found.add(change.task_id)
        if change.new == "PENDING":
            running[change.task_id] = (change.at, change.executor_id)
    found.update(t for t, began in running.items() if _overlaps(began, end, start, end, executor_id))
    return found


# A claim commits without waiting for its WAL flush (docs/guarantees.md): a server crash within
# three wal_writer_delay (200 ms by default) of it may undo it. One second, with margin.
ASYNC_COMMIT_LOSS_SECONDS = 1.0
# Between the worker's clock reading of a claim's time and the harness's of a crash's start.
CLOCK_MARGIN_SECONDS = 0.05


def forgotten_claims(
    history: list[Transition], seen: Ledger, crashes: Iterable[tuple[float, float]]
) -> list[str]:
    """Task ids, once per claim a crash of the server undid: a step body ran under a claim
    token the status history never recorded, less than ASYNC_COMMIT_LOSS_SECONDS before a
    crash (``crashes``: the (start, end) of each immediate restart), during one, or within
    OWNERSHIP_FRESH_SECONDS of its start (a first step trusts a claim that young without
    reading the task, docs/guarantees.md, so it may start after a quick restart). Such a
    task was running when the server crashed, as one the history shows PENDING then, but
    nothing of it says so: its claim, its attempt and their history row went with the crash.
    An execution under an unrecorded token at any other time is left out (a problem)."""
    recorded = {(c.task_id, c.claim_token) for c in history if c.new == "PENDING"}
    trusted = OWNERSHIP_FRESH_SECONDS + CLOCK_MARGIN_SECONDS
    windows = [(start - ASYNC_COMMIT_LOSS_SECONDS, max(end, start + trusted)) for start, end in crashes]
    forgotten = set()
    for (task_id, _), executions in seen.runs.items():
        for run in executions:
            if (task_id, run.token) not in recorded and any(a <= run.at <= b for a, b in windows):
                forgotten.add((task_id, run.token))
    return sorted(task_id for task_id, _ in forgotten)


def given_back(database_url: str) -> list[str]:
    """Task ids, once per time a task went from PENDING back to ENQUEUED (recovered from a
    dead or stalled executor, or released by a live one): the fault log the history keeps."""
    return [c.task_id for c in status_history(database_url) if c.old == "PENDING" and c.new == "ENQUEUED"]


def unfinished(database_url: str, task_ids: Iterable[str]) -> list[str]:
    """Those of ``task_ids`` that are missing or not in a terminal state yet."""
    final = {r[0]: r[1] for r in query(database_url, "SELECT workflow_uuid, status FROM {t}")}
    return [i for i in task_ids if final.get(i) not in TERMINAL]


def _overlaps(
    began: tuple[float, str | None], left: float, start: float, end: float, executor_id: str | None
) -> bool:
    at, owner = began
    return at <= end and left >= start and executor_id in (None, owner)


# -- the check ------------------------------------------------------------------------------


@dataclass
class Report:
    """The figures of one invariant check and the problems found (empty when all holds)."""

    acknowledged: int = 0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    transitions: int = 0  # status changes recorded by the history trigger
    checkpoints: int = 0  # rows of operation_outputs
    effects: int = 0  # step-body executions in the ledger
    repeated: int = 0  # checkpointed steps whose body ran more than once
    faulted: int = 0  # distinct tasks in the fault log
    max_attempts: int = 0  # the highest recovery_attempts of any task
    peaks: dict[str, tuple[int, int]] = field(default_factory=dict)  # queue: (peak, limit)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(self.statuses.items())) or "none"
        lines = [
            f"tasks acknowledged {self.acknowledged:,}; in the database {sum(self.statuses.values()):,}"
            f" ({statuses})",
            f"status changes recorded {self.transitions:,}; highest recovery_attempts {self.max_attempts}",
            f"checkpoints {self.checkpoints:,}; step bodies run {self.effects:,}; run more than once "
            f"{self.repeated:,} (tasks touched by a fault: {self.faulted:,})",
        ]
        for queue, (peak, limit) in self.peaks.items():
            measure = "most starts" if " per " in queue else "peak concurrency"  # rate or concurrency
            lines.append(f"{measure} of queue {queue}: {peak} (limit {limit})")
        verdict = "PASSED" if self.ok else f"FAILED ({len(self.problems)} problems)"
        lines.append(f"invariants: {verdict}")
        lines += [f"  - {problem}" for problem in self.problems[:20]]
        return "\n".join(lines)


def check(
    database_url: str,
    acknowledged_ids: Iterable[str],
    faulted_ids: Iterable[str] = (),
    limits: Mapping[str, int] | None = None,
    *,
    ledger: Path | None = None,
    rate_limits: Mapping[str, tuple[int, float]] | None = None,
    strict: bool = True,
    forgotten_ids: Iterable[str] = (),
) -> Report:
    """Check the invariants (module docstring) and return the report; with ``strict`` (the
    default) raise AssertionError with the summary if any failed.

    ``faulted_ids``: tasks a fault touched, once per fault (a task listed twice may run a step
    body three times). ``limits``: queue name -> the most tasks it may run at once, measured
    from :func:`span` lines. ``ledger``: the effects file; without it the effect checks are
    skipped. ``rate_limits``: queue name -> (most starts, period in seconds), checked on the
    history: no window of that period holds more claims of the queue's tasks (claims of
    faulted tasks are left out: a re-claim after recovery replaces the start the limiter
    counts). ``forgotten_ids``: tasks, once per claim a server crash undid
    (:func:`forgotten_claims`): each is a start that ``recovery_attempts`` does not count. The
    history checks need :func:`install_history` to have run first."""
    acked = set(acknowledged_ids)
    faults = collections.Counter(faulted_ids)
    tasks = {r[0]: r for r in query(database_url, _TASKS)}
    steps: dict[str, list[int]] = collections.defaultdict(list)
    for task_id, function_id in query(database_url, _STEPS):
        steps[task_id].append(function_id)
    history = status_history(database_url)
    report = Report(
        acknowledged=len(acked),
        statuses=collections.Counter(row[1] for row in tasks.values()),
        transitions=len(history),
        checkpoints=sum(len(ids) for ids in steps.values()),
        faulted=len(faults),
        max_attempts=max((row[2] for row in tasks.values()), default=0),
    )
    problems = report.problems
    problems += _check_outcomes(acked, tasks, history)
    problems += _check_steps(steps)
    problems += _check_attempts(tasks, history)
    if ledger is not None:
        seen = read_ledger(ledger)
        report.effects = sum(seen.effects.values())
        report.repeated = sum(1 for (t, f), n in seen.effects.items() if n > 1 and f in steps.get(t, ()))
        forgotten = collections.Counter(forgotten_ids)
        problems += _check_effects(seen, tasks, steps, faults, forgotten, history)
        # A stalled executor may finish a body after its task was taken over: such a zombie
        # execution (a faulted task's, under an earlier claim) was not counted by the claim.
        spans = [s for token, s in seen.spans if not faults[s.task_id] or token == tasks[s.task_id][5]]
        for queue, limit in (limits or {}).items():
            peak = max_overlap([s for s in spans if s.label == queue])
            report.peaks[queue] = (peak, limit)
            if peak > limit:
                problems.append(f"queue {queue!r} ran {peak} tasks at once, over its limit of {limit}")
    for queue, (most, period) in (rate_limits or {}).items():
        on_queue = {t for t, row in tasks.items() if row[6] == queue and not faults[t]}
        peak = max_in_window([c.at for c in history if c.new == "PENDING" and c.task_id in on_queue], period)
        report.peaks[f"{queue} per {period:g}s"] = (peak, most)
        if peak > most:
            window = f"{period:g}s"
            problems.append(f"queue {queue!r} started {peak} tasks within {window}, over its limit of {most}")
    if strict and problems:
        raise AssertionError(report.summary())
    return report


def max_in_window(times: list[float], period: float) -> int:
    """The most instants in any window ``(t - period, t]``: the limiter's window, less the
    instant at its very start (the history keeps milliseconds; never a false alarm)."""
    ordered = sorted(times)
    best, first = 0, 0
    for last, instant in enumerate(ordered):
        while ordered[first] <= instant - period:
            first += 1
        best = max(best, last - first + 1)
    return best


_TASKS = (
    "SELECT workflow_uuid, status, recovery_attempts, max_recovery_attempts, retries, claim_token, "
    "queue_name FROM {t}"
)
_STEPS = "SELECT workflow_uuid, function_id FROM {o} ORDER BY workflow_uuid, function_id"
Row = tuple[Any, ...]


def _check_outcomes(acked: set[str], tasks: dict[str, Row], history: list[Transition]) -> list[str]:
    problems = []
    missing = sorted(acked - tasks.keys())
    if missing:
        problems.append(f"{len(missing)} acknowledged tasks are not in the database, e.g. {missing[:3]}")
    unfinished = sorted(f"{i} ({tasks[i][1]})" for i in acked & tasks.keys() if tasks[i][1] not in TERMINAL)
    if unfinished:
        problems.append(f"{len(unfinished)} tasks did not reach a terminal state, e.g. {unfinished[:3]}")
    unexpected = sorted(tasks.keys() - acked)
    if unexpected:
        problems.append(f"{len(unexpected)} tasks that nobody acknowledged, e.g. {unexpected[:3]}")
    endings = collections.Counter(c.task_id for c in history if c.new in TERMINAL)
    reopened = sorted({c.task_id for c in history if c.old in TERMINAL})
    if reopened:
        problems.append(f"{len(reopened)} tasks left a terminal state, e.g. {reopened[:3]}")
    if history:
        twice = sorted(t for t in tasks if endings[t] > 1)
        if twice:
            problems.append(f"{len(twice)} tasks reached a terminal state more than once, e.g. {twice[:3]}")
    return problems


def _check_steps(steps: dict[str, list[int]]) -> list[str]:
    return [
        f"task {task_id} has checkpoints {ids}, not 1..{len(ids)}"
        for task_id, ids in steps.items()
        if ids != list(range(1, len(ids) + 1))
    ]


def _check_attempts(tasks: dict[str, Row], history: list[Transition]) -> list[str]:
    problems = []
    claims = collections.Counter(c.task_id for c in history if c.new == "PENDING")
    for task_id, (_, status, attempts, most, retries, *_) in tasks.items():
        if attempts > most + 1:
            problems.append(f"task {task_id} started {attempts} times, over 1 + max_recovery_attempts={most}")
        if retries == 0 and claims[task_id] > most + 1:
            problems.append(f"task {task_id} was claimed {claims[task_id]} times, over 1 + {most}")
        if status == "MAX_RECOVERY_ATTEMPTS_EXCEEDED" and attempts <= most:
            problems.append(f"task {task_id} was dead-lettered after {attempts} of 1 + {most} starts")
    return problems


def _check_effects(
    seen: Ledger,
    tasks: dict[str, Row],
    steps: dict[str, list[int]],
    faults: collections.Counter[str],
    forgotten: collections.Counter[str],
    history: list[Transition],
) -> list[str]:
    problems = []
    effects = seen.effects
    for task_id, ids in steps.items():
        for function_id in ids:
            ran, allowed = effects[(task_id, function_id)], 1 + faults[task_id]
            if ran == 0:
                problems.append(f"step {function_id} of {task_id} is checkpointed but its body never ran")
            elif ran > allowed:
                who = _who_ran(seen, history, task_id, function_id)
                problems.append(f"step {function_id} of {task_id} ran {ran} times (allowed {allowed}) {who}")
    for (task_id, function_id), ran in effects.items():
        row = tasks.get(task_id)
        if row is None:
            problems.append(f"a step body ran for {task_id}, which is not in the database")
        elif function_id not in steps.get(task_id, ()) and row[1] == "SUCCESS":
            problems.append(f"step {function_id} of {task_id} ran but the successful task has no checkpoint")
        elif row[4] == 0 and ran > row[2] + forgotten[task_id]:
            lost = forgotten[task_id]
            starts = f"{row[2]} starts" + (f" and {lost} forgotten" if lost else "")
            who = _who_ran(seen, history, task_id, function_id)
            problems.append(f"step {function_id} of {task_id} ran {ran} times in {starts} {who}")
    return problems


def _who_ran(seen: Ledger, history: list[Transition], task_id: str, function_id: int) -> str:
    """Who ran a step too often and the task's status changes: what a failure in CI must
    show, since its database is gone afterwards."""
    mine = [c for c in history if c.task_id == task_id]
    known = {c.claim_token for c in mine}
    runs = "; ".join(
        f"pid {r.pid} at {r.at:.3f} under claim {r.token}" + ("" if r.token in known else " (unrecorded)")
        for r in seen.runs.get((task_id, function_id), [])
    )
    changes = ", ".join(f"{c.old or '-'}->{c.new} on {c.executor_id} at {c.at:.3f}" for c in mine)
    return f"[runs: {runs or 'not recorded'}] [status changes: {changes or 'not recorded'}]"


# -- reading the system database directly --------------------------------------------------


def query(database_url: str, sql: str, params: tuple[Any, ...] = ()) -> list[Row]:
    """Run one statement on a plain connection of the system database (no engine code in
    between) and return its rows. In ``sql``, ``{t}`` names workflow_status, ``{o}``
    operation_outputs, ``{s}`` workflow_schedules and ``{h}`` the status history; placeholders
    are ``?`` on both dialects."""
    target = parse_database_url(database_url)
    with _connect(target) as (conn, prefix):
        text = sql.format(
            t=f"{prefix}workflow_status",
            o=f"{prefix}operation_outputs",
            s=f"{prefix}workflow_schedules",
            h=prefix + HISTORY_TABLE,
        )
        if target.dialect == "postgres":
            text = text.replace("?", "%s")
        cursor = conn.execute(text, params)
        rows = [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        conn.commit()
        return rows


def _has_history(database_url: str) -> bool:
    target = parse_database_url(database_url)
    with _connect(target) as (conn, _):
        if target.dialect == "postgres":
            sql = "SELECT to_regclass(%s) IS NOT NULL"
            found = conn.execute(sql, [f'"{target.schema}".{HISTORY_TABLE}']).fetchone()
        else:
            sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
            found = conn.execute(sql, [HISTORY_TABLE]).fetchone()
        return bool(found and found[0])


@contextlib.contextmanager
def _connect(target: DatabaseTarget) -> Iterator[tuple[Any, str]]:
    """A plain connection (no engine code in between) and the prefix of table names."""
    if target.dialect == "postgres":
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            yield conn, f'"{target.schema}".'
    else:
        with contextlib.closing(sqlite3.connect(target.sqlite_path, timeout=30)) as conn:
            yield conn, ""

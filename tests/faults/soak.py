"""The soak: a seeded random schedule of faults against real workers while a producer
enqueues, then the invariant check of :mod:`tests.faults.invariants`.

    python -m tests.faults.soak [--minutes 5] [--seed 1] [--workers 3] [--out DIR]

It starts its own throwaway PostgreSQL (fsync on), because it restarts it. The faults, one
at a time with a pause of a few seconds between them (the first ones cover every kind, in a
seeded order):

- ``kill``: SIGKILL a worker (a prefork worker's children die with it), start it again
  under the same name (it resumes its own tasks at once);
- ``stop``: SIGSTOP a worker and its children for twice the lease (others take its tasks
  over), then SIGCONT (it must notice and abandon them);
- ``pg-fast`` / ``pg-immediate``: restart PostgreSQL with ``-m fast`` / ``-m immediate``;
- ``crashpoint``: start an extra worker armed with a random crash point; it dies there;
- ``beat-kill``: SIGKILL one of the two `pgtasks beat` processes, start it again;
- ``beat-crash``: start an extra beat armed with ``after_fire_before_commit``; it dies inside
  its first fire, which rolls back;
- ``operator-lock``: an operator holds rows for one lease (``SELECT ... FOR UPDATE``
  on a few unfinished tasks, running or waiting, and on every queue's settings row). No task
  counts as touched by it: holding rows must not make any step body run twice.

The whole run has role timeouts (``lock_timeout`` 300 ms, ``statement_timeout`` 10 s on the
role everyone connects as), as managed databases often set them: a held row then makes the
workers' statements fail with LockNotAvailable, which pgtasks must retry as the database's.

The producer sends ``faults.steps`` tasks (1 to 4 steps, some on the ``limited`` queue,
concurrency 2, some on the ``metered`` queue, 4 starts per second) with ids it chooses,
re-sending an id until the send is acknowledged, so an enqueue whose reply was lost is
never counted twice or missed. At the end it drains the
queue and checks: every acknowledged task succeeded exactly once, no step body ran twice
unless a fault touched its task (the tasks PENDING on the faulted executor, or on any for a
PostgreSQL restart, during the fault; and a task whose claim an immediate restart undid, a
claim committing without waiting for its WAL flush, which the history then lacks too: see
``invariants.forgotten_claims``), no queue went over its limit; and the schedule
``soak-tick`` (every second, with backfill) fired every due time from its start to the end
of the faults exactly once, each fire a task that succeeded. Exit status 1 if not.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgtasks import Client
from tests.faults.apps.fault_app import (
    LIMITED_CONCURRENCY,
    LIMITED_QUEUE,
    METERED_QUEUE,
    METERED_RATE,
    TICK_CRON,
    TICK_SCHEDULE,
)
from tests.faults.fires import FireReport, check_fires
from tests.faults.invariants import (
    Report,
    check,
    forgotten_claims,
    install_history,
    read_ledger,
    status_history,
    touched,
    unfinished,
)
from tests.support.ledger import lines_of
from tests.support.pgserver import PostgresServer
from tests.support.processes import beat_process, worker_process

APP = "tests.faults.apps.fault_app"
KINDS = ("kill", "stop", "pg-fast", "pg-immediate", "crashpoint", "beat-kill", "beat-crash", "operator-lock")
ROLE_TIMEOUTS = {"lock_timeout": "300ms", "statement_timeout": "10s"}
HELD_TASKS = 5  # unfinished tasks an operator-lock fault holds
BEATS = 2
CRASH_POINTS = (
    "after_claim_commit",
    "before_step_body:function_id=2",
    "after_step_body_before_checkpoint:function_id=1",
    "after_step_body_before_checkpoint:function_id=2",
    "after_checkpoint_commit:function_id=1",
    "before_outcome",
    "after_outcome_commit",
)
POOLS = ("threads", "prefork")
DRAIN_TIMEOUT = 180.0
ARMED_TIMEOUT = 20.0  # an armed worker that has not died by then is killed
BUSY_TIMEOUT = 5.0  # a kill or stop waits this long at most for its victim to hold a task


@dataclass(frozen=True)
class SoakOptions:
    seconds: float
    seed: int
    workers: int = 3
    lease: float = 2.0
    rate: float = 15.0  # tasks sent per second
    pause: tuple[float, float] = (2.0, 5.0)  # seconds between two faults


@dataclass(frozen=True)
class Fault:
    """One fault: what, on which executor (None: all), and when (time.time())."""

    kind: str
    executor_id: str | None
    start: float
    end: float
    detail: str = ""


@dataclass
class SoakResult:
    options: SoakOptions
    report: Report
    fires: FireReport
    faults: list[Fault]
    seconds: float  # the whole run, drain included
    drain_seconds: float
    pools: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.fires.problems

    def summary(self) -> str:
        kinds = collections.Counter(f.kind for f in self.faults)
        crashes = collections.Counter(f.detail for f in self.faults if f.kind == "crashpoint")
        lines = [
            f"soak: {self.options.seconds:.0f} s of faults + {self.drain_seconds:.1f} s drain "
            f"({self.seconds:.0f} s in all), seed {self.options.seed}, {self.options.workers} workers "
            f"({', '.join(self.pools)}), lease {self.options.lease:g} s",
            f"faults injected {len(self.faults)}: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS),
            "crash points hit: " + (", ".join(f"{p} {n}" for p, n in sorted(crashes.items())) or "none"),
            self.report.summary(),
            self.fires.summary(),
        ]
        return "\n".join(lines)


@dataclass
class _Worker:
    name: str
    pool: str
    process: subprocess.Popen[str]


class Soak:
    """One run against ``server`` (which it may restart); logs and the ledger go to ``out``."""

    def __init__(self, server: PostgresServer, options: SoakOptions, out: Path) -> None:
        self.server, self.options, self.out = server, options, out
        self.url = server.url + "?schema=soak"
        self.ledger = out / "effects.log"
        self.rng = random.Random(options.seed)
        self.faults: list[Fault] = []
        self.problems: list[str] = []
        self.acknowledged: list[str] = []
        self.workers: list[_Worker] = []
        self.beats: list[_Worker] = []
        self._producing = threading.Event()
        self._armed = 0

    # -- workers ------------------------------------------------------------------------
    def _start(self, name: str, pool: str, crashpoint: str | None = None) -> _Worker:
        process = worker_process(
            self.url,
            self.ledger,
            name,
            app=APP,
            crashpoint=crashpoint,
            lease_seconds=self.options.lease,
            concurrency=3,
            extra_args=("-Q", f"default,{LIMITED_QUEUE},{METERED_QUEUE}", "-l", "WARNING"),
            output=self.out / f"{name}.log",
            pool=pool,
        )
        return _Worker(name, pool, process)

    def _start_beat(self, name: str, crashpoint: str | None = None) -> _Worker:
        log = self.out / f"{name}.log"
        return _Worker(name, "beat", beat_process(self.url, log, app=APP, crashpoint=crashpoint))

    def _supervise(self) -> None:
        """Restart any worker or beat that exited on its own (a problem: none should)."""
        for processes in (self.workers, self.beats):
            for i, worker in enumerate(processes):
                code = worker.process.poll()
                if code is not None:
                    now = time.time()
                    # Its log is overwritten by the restart: keep its last lines in the report.
                    tail = "".join(
                        f"\n      | {line}" for line in lines_of(self.out / f"{worker.name}.log")[-15:]
                    )
                    self.problems.append(f"{worker.name} exited on its own with code {code}{tail}")
                    self.faults.append(Fault("unexpected-exit", worker.name, now, now))
                    processes[i] = self._restart(worker)

    def _restart(self, worker: _Worker) -> _Worker:
        """A new process under the same name, a beat or a worker of the same pool."""
        if worker.pool == "beat":
            return self._start_beat(worker.name)
        return self._start(worker.name, worker.pool)

    def _kill_one(self, kind: str, processes: list[_Worker]) -> None:
        """SIGKILL one of ``processes`` at random and start it again under its name."""
        i = self.rng.randrange(len(processes))
        victim = processes[i]
        if processes is self.workers:
            self._await_busy(victim.name)
        at = time.time()
        victim.process.kill()
        victim.process.wait()
        self.faults.append(Fault(kind, victim.name, at, at))
        processes[i] = self._restart(victim)

    def _await_busy(self, executor_id: str) -> None:
        """Wait (up to BUSY_TIMEOUT) until ``executor_id`` holds a running task, so that a
        kill or stop hits one: tasks last tens of milliseconds, and a worker is idle most of
        the time at the producer's rate. Past the deadline the fault goes ahead anyway."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        with psycopg.connect(self.server.url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                busy = conn.execute(
                    "SELECT 1 FROM soak.workflow_status WHERE status = 'PENDING' AND executor_id = %s"
                    " LIMIT 1",
                    [executor_id],
                ).fetchone()
                if busy:
                    return
                self._supervise()
                time.sleep(0.005)

    def _idle(self, seconds: float) -> None:
        """Let time pass (the schedule's pause, not a synchronisation), supervising."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._supervise()
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    # -- the producer -------------------------------------------------------------------
    def _produce(self) -> None:
        rng = random.Random(self.options.seed + 1)
        client = Client(self.url, pool_size=2)
        sent = 0
        started = time.monotonic()
        try:
            while self._producing.is_set():
                task_id = f"soak-{sent:07d}"
                pick = rng.random()
                queue = LIMITED_QUEUE if pick < 0.2 else METERED_QUEUE if pick < 0.35 else "default"
                args = [rng.randint(1, 4), rng.choice((0.0, 0.01, 0.05))]
                while True:  # the same id until acknowledged: a lost reply is not a lost task
                    try:
                        client.enqueue("faults.steps", args, task_id=task_id, queue=queue)
                        break
                    except Exception:
                        time.sleep(0.1)
                self.acknowledged.append(task_id)
                sent += 1
                time.sleep(max(0.0, started + sent / self.options.rate - time.monotonic()))
        finally:
            client.close()

    # -- the faults ---------------------------------------------------------------------
    def _inject(self, kind: str) -> None:
        if kind == "kill":
            self._kill_one(kind, self.workers)
        elif kind == "stop":
            worker = self.rng.choice(self.workers)
            self._await_busy(worker.name)
            tree = [worker.process.pid, *_descendants(worker.process.pid)]
            start = time.time()
            _signal_all(tree, signal.SIGSTOP)
            try:
                self._idle(2 * self.options.lease)
            finally:
                _signal_all(tree, signal.SIGCONT)
            self.faults.append(Fault(kind, worker.name, start, time.time()))
        elif kind in ("pg-fast", "pg-immediate"):
            start = time.time()
            self.server.stop(kind.removeprefix("pg-"))
            self.server.launch()
            self.faults.append(Fault(kind, None, start, time.time()))
        elif kind == "beat-kill":
            self._kill_one(kind, self.beats)
        elif kind == "beat-crash":
            self._crash_at("after_fire_before_commit", beat=True)
        elif kind == "operator-lock":
            self._hold_rows()
        else:
            self._crash_at(self.rng.choice(CRASH_POINTS))

    def _hold_rows(self) -> None:
        """Hold a few unfinished tasks and every queue's row for one lease. The fault is
        on no executor (``operator``): no task may count as touched by it."""
        start = time.time()
        with psycopg.connect(self.server.url) as operator:
            held = operator.execute(
                "SELECT workflow_uuid FROM soak.workflow_status "
                "WHERE status IN ('PENDING', 'ENQUEUED', 'DELAYED') ORDER BY random() LIMIT %s FOR UPDATE",
                [HELD_TASKS],
            ).fetchall()
            operator.execute("SELECT 1 FROM soak.queues FOR UPDATE")
            self._idle(self.options.lease)
            operator.rollback()
        self.faults.append(Fault("operator-lock", "operator", start, time.time(), f"{len(held)} tasks"))

    def _crash_at(self, point: str, beat: bool = False) -> None:
        self._armed += 1
        name = f"armed{self._armed}"
        armed = self._start_beat(name, point) if beat else self._start(name, "threads", crashpoint=point)
        deadline = time.monotonic() + ARMED_TIMEOUT
        while armed.process.poll() is None and time.monotonic() < deadline:
            self._supervise()
            time.sleep(0.02)
        at = time.time()
        if armed.process.poll() is None:  # never reached its point: a plain kill then
            armed.process.kill()
            armed.process.wait()
            self.faults.append(Fault("kill", armed.name, at, at, f"armed at {point}, not reached"))
        elif armed.process.returncode != -signal.SIGKILL:
            self.problems.append(f"{armed.name} exited with {armed.process.returncode}, not at {point}")
        else:
            self.faults.append(Fault("beat-crash" if beat else "crashpoint", armed.name, at, at, point))

    # -- the run ------------------------------------------------------------------------
    def run(self, progress: Callable[[str], None] = lambda _: None) -> SoakResult:
        began = time.monotonic()
        install_history(self.url)
        with psycopg.connect(self.server.url, autocommit=True) as conn:  # for every later session
            for setting, value in ROLE_TIMEOUTS.items():
                conn.execute(f"ALTER ROLE CURRENT_USER SET {setting} = '{value}'")
        pools = [POOLS[i % len(POOLS)] for i in range(self.options.workers)]
        self.workers = [self._start(f"w{i}", pool) for i, pool in enumerate(pools)]
        self.beats = [self._start_beat(f"beat{i}") for i in range(BEATS)]
        self._producing.set()
        producer = threading.Thread(target=self._produce, name="producer", daemon=True)
        producer.start()
        schedule = list(self.rng.sample(KINDS, len(KINDS)))
        end = time.monotonic() + self.options.seconds
        try:
            while True:
                self._idle(self.rng.uniform(*self.options.pause))
                if time.monotonic() >= end and not schedule:  # every kind once, at least
                    break
                kind = schedule.pop(0) if schedule else self.rng.choice(KINDS)
                progress(f"{time.monotonic() - began:6.1f}s  {kind}  ({len(self.acknowledged)} sent)")
                self._inject(kind)
            self._producing.clear()
            producer.join(60)
            faults_ended = dt.datetime.now(dt.UTC)
            drained = time.monotonic()
            progress(f"{drained - began:6.1f}s  draining {len(self.acknowledged)} tasks")
            self._drain(self.acknowledged)
            self._stop(self.beats)  # the drain gave them time to catch up with the faults' end
            self.beats = []  # stopped on purpose: no longer supervised (restarted) by the drain below
            fires = check_fires(self.url, TICK_SCHEDULE, TICK_CRON, caught_up_by=faults_ended)
            self._drain(fires.task_ids)
            drain_seconds = time.monotonic() - drained
        finally:
            self._producing.clear()
            self._stop(self.beats)
            self._stop(self.workers)
        history = status_history(self.url)
        faulted = [t for f in self.faults for t in touched(history, f.start, f.end, f.executor_id)]
        crashes = [(f.start, f.end) for f in self.faults if f.kind == "pg-immediate"]
        forgotten = forgotten_claims(history, read_ledger(self.ledger), crashes)
        report = check(
            self.url,
            [*self.acknowledged, *fires.task_ids],
            faulted_ids=[*faulted, *forgotten],
            forgotten_ids=forgotten,
            limits={LIMITED_QUEUE: LIMITED_CONCURRENCY},
            ledger=self.ledger,
            rate_limits={METERED_QUEUE: METERED_RATE},
            strict=False,
        )
        others = {s: n for s, n in report.statuses.items() if s != "SUCCESS"}
        if others:
            self.problems.append(f"tasks that did not succeed: {others}")
        report.problems[:0] = self.problems
        seconds = time.monotonic() - began
        return SoakResult(self.options, report, fires, self.faults, seconds, drain_seconds, pools)

    def _drain(self, task_ids: list[str]) -> None:
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while unfinished(self.url, task_ids):
            if time.monotonic() > deadline:
                self.problems.append(f"the queue did not drain within {DRAIN_TIMEOUT:.0f} s")
                return
            self._idle(0.2)

    def _stop(self, processes: list[_Worker]) -> None:
        for worker in processes:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        for worker in processes:
            try:
                worker.process.wait(60)
            except subprocess.TimeoutExpired:
                self.problems.append(f"{worker.name} did not stop on SIGTERM within 60 s")
                worker.process.kill()
                worker.process.wait()


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (a prefork worker's fork server and pool), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            continue


def run_soak(options: SoakOptions, out: Path, fsync: bool = True, verbose: bool = False) -> SoakResult:
    """Start a PostgreSQL of its own, run the soak against it, destroy it."""
    out.mkdir(parents=True, exist_ok=True)
    server = PostgresServer(fsync=fsync).start()
    try:
        progress = (lambda line: print(line, flush=True)) if verbose else (lambda _: None)
        return Soak(server, options, out).run(progress)
    finally:
        server.destroy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to inject faults (default 5)")
    parser.add_argument("--seed", type=int, default=1, help="the seed of the fault schedule (default 1)")
    parser.add_argument("--workers", type=int, default=3, help="workers, alternately threads and prefork")
    parser.add_argument("--rate", type=float, default=15.0, help="tasks sent per second (default 15)")
    parser.add_argument("--out", type=Path, default=None, help="folder for worker logs and the ledger")
    args = parser.parse_args(argv)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # the restarts are on purpose
    out = args.out or Path(tempfile.mkdtemp(prefix="pgtasks-soak-"))
    options = SoakOptions(seconds=args.minutes * 60, seed=args.seed, workers=args.workers, rate=args.rate)
    result = run_soak(options, out, verbose=True)
    command = " ".join(["python -m tests.faults.soak", *(argv if argv is not None else sys.argv[1:])])
    print(result.summary())
    print(f"command: {command}")
    print(f"logs and ledger: {out}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The ``pgtasks`` parser takes Celery's command line itself: global options before or after
the command, Celery's worker and beat flags (ignored with a warning, or refused), ``-P gevent``,
``-n w1@%h``. Parsing changes nothing; :func:`apply_global_options` does what the global options
say. Every command runs through its own function (``set_defaults(func=...)``)."""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.cli.main import _parser
from pgtasks.cli.options import apply_global_options, ignored_flags
from pgtasks.engine.errors import ConfigurationError


def parse(line: str) -> argparse.Namespace:
    return _parser().parse_args(line.split())


def _leaves(parser: argparse.ArgumentParser, path: str, func: object = None) -> Iterator[tuple[str, object]]:
    """Each command that takes no subcommand, with the function its parser or a parent sets."""
    func = parser._defaults.get("func", func)
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        yield path, func
    for action in subcommands:
        for name, sub in action.choices.items():
            yield from _leaves(sub, f"{path} {name}", func)


def test_every_command_runs_through_its_function() -> None:
    leaves = dict(_leaves(_parser(), "pgtasks"))
    assert len(leaves) == 41 and "pgtasks tasks fork" in leaves and "pgtasks celery-check" in leaves
    assert {"pgtasks flower", "pgtasks control", "pgtasks report", "pgtasks shell", "pgtasks events"} <= set(
        leaves
    )
    assert [path for path, func in leaves.items() if not callable(func)] == []


@pytest.mark.parametrize(
    "line",
    [
        "-A proj worker",
        "worker -A proj",
        "--app=proj worker",
        "worker --app proj",
        "-A other worker -A proj",  # the command's own wins, as the last one given
        "-A proj inspect ping",
        "inspect -A proj ping",
        "tasks -A proj list",
        "tasks list -A proj",
    ],
)
def test_the_app_goes_before_or_after_the_command(line: str) -> None:
    assert parse(line).app == "proj"


def test_a_procfile_worker_line() -> None:
    line = (
        "-A proj worker -l info -Q a,b -c 8 -P gevent -n w1@%h --loglevel=INFO -E --without-gossip "
        "--without-mingle --without-heartbeat -Ofair --pidfile=/run/w.pid --logfile /var/log/w.log"
    )
    args = parse(line)
    assert (args.command, args.app, args.queues, args.concurrency) == ("worker", "proj", "a,b", 8)
    assert args.loglevel == "INFO" and args.pool == "threads"
    assert args.hostname == f"w1@{socket.gethostname()}"
    assert (args.pidfile, args.logfile) == ("/run/w.pid", "/var/log/w.log")  # served, as Celery's
    assert ignored_flags(args) == [
        "-P gevent (green threads are not supported; using -P threads)",
        "-E (pgtasks has no use for it)",
        "--without-gossip (pgtasks has no use for it)",
        "--without-mingle (pgtasks has no use for it)",
        "--without-heartbeat (pgtasks has no use for it)",
        "-O (pgtasks has no use for it)",
    ]
    assert parse("-A proj worker --autoscale=3,10").autoscale == (10, 3)  # Celery sorts them
    assert parse("-A proj worker --autoscale 6").autoscale == (6, 0)


def test_pgtasks_defaults_and_own_options() -> None:
    args = parse("worker -A proj --prefetch-multiplier=2 -l=debug")
    assert args.pool == "prefork" and args.concurrency is None and args.hostname is None
    assert args.prefetch_multiplier == 2 and args.loglevel == "DEBUG" and ignored_flags(args) == []
    assert parse("-A proj beat --max-interval 5").max_interval == 5.0  # pgtasks beat's own option


def test_global_options_before_and_after_the_command_are_all_kept() -> None:
    args = parse("-q -b postgresql://db/x --workdir /srv worker -A proj -C --config celeryconfig")
    assert (args.broker_url, args.workdir) == ("postgresql://db/x", "/srv")
    assert args.config_module == "celeryconfig"
    assert ignored_flags(args) == [
        "-q (pgtasks has no use for it)",
        "-C (pgtasks has no use for it)",
    ]
    beat = parse("-A proj beat -S django_celery_beat.schedulers:DatabaseScheduler -s /tmp/beat")
    assert beat.command == "beat" and len(ignored_flags(beat)) == 1  # -s: -S is the scheduler
    assert beat.scheduler == "django_celery_beat.schedulers:DatabaseScheduler"


def test_celerys_other_commands_keep_their_own_flags() -> None:
    inspect = parse("-A proj inspect ping -d celery@host -t 2 -j")
    assert (inspect.method, inspect.destination, inspect.timeout, inspect.json) == (
        "ping",
        "celery@host",
        2,
        True,
    )
    purge = parse("purge -A proj -f -Q a,b")
    assert purge.force and purge.queues == "a,b"
    imported = parse("-b postgresql://db/x import-celery --broker redis://r:6379/0 -Q celery")
    assert imported.broker == "redis://r:6379/0" and imported.broker_url == "postgresql://db/x"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("worker -A proj -D", "pgtasks worker: error: -D: pgtasks runs in the foreground"),
        ("worker -A proj --detach", "pgtasks worker: error: --detach: pgtasks runs in the foreground"),
        ("-A proj beat --detach", "pgtasks beat: error: --detach: pgtasks runs in the foreground"),
        (
            "worker -A proj -P eventlet2",
            "argument -P/--pool: invalid choice: 'eventlet2' (choose from 'prefork', 'threads', 'solo', "
            "'asyncio')",
        ),
        ("tasks list -E", "unrecognized arguments: -E"),  # a worker flag is the worker's only
        (
            "worker -A proj -l LOUD",
            "argument -l/--loglevel: invalid choice: 'LOUD' (choose from 'DEBUG', 'INFO', 'WARNING', "
            "'ERROR', 'CRITICAL', 'FATAL')",
        ),
        ("beat -A proj --loglevel verbose", "argument -l/--loglevel: invalid choice: 'VERBOSE'"),
        # Celery refuses these (exit status 2); they were ignored, a typo unseen
        ("worker -A proj -O bogus", "argument -O/--optimization: 'bogus' is not one of 'default', 'fair'"),
        (
            "worker -A proj --autoscale 10,x",
            "argument --autoscale: takes MAX[,MIN], one or two whole numbers",
        ),
        ("worker -A proj --autoscale 1,2,3", "argument --autoscale: takes MAX[,MIN]"),
        ("worker -A proj --autoscale 0", "argument --autoscale: takes MAX[,MIN]"),
    ],
)
def test_bad_lines_are_refused_with_the_reason(
    line: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        parse(line)
    assert refused.value.code == 2
    assert message in capsys.readouterr().err


def test_uid_and_gid_are_options_of_the_worker_and_the_beat() -> None:
    # taken by the command (cli/privileges.py); they were ignored with a warning
    worker = parse("worker -A proj --uid nobody --gid nogroup")
    assert (worker.uid, worker.gid, ignored_flags(worker)) == ("nobody", "nogroup", [])
    assert (parse("beat -A proj --uid 65534").uid, parse("beat -A proj").gid) == ("65534", None)


def test_the_global_options_act_only_when_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CELERY_BROKER_URL", "")  # so that the variable is restored (removed) afterwards
    monkeypatch.delenv("CELERY_BROKER_URL")
    (tmp_path / "proj").mkdir()
    args = parse(f"-q --workdir {tmp_path / 'proj'} -b postgresql://db/x worker -A proj --quiet -E")
    assert Path.cwd() == tmp_path and "CELERY_BROKER_URL" not in os.environ
    assert capsys.readouterr().err == ""
    apply_global_options(args)
    assert Path.cwd() == tmp_path / "proj" and os.environ["CELERY_BROKER_URL"] == "postgresql://db/x"
    assert capsys.readouterr().err.splitlines() == [
        "pgtasks: warning: ignoring Celery option --quiet (pgtasks has no use for it)",  # once
        "pgtasks: warning: ignoring Celery option -E (pgtasks has no use for it)",
    ]
    with pytest.raises(ConfigurationError) as refused:
        apply_global_options(parse(f"--workdir {tmp_path / 'absent'} worker"))
    assert str(refused.value) == f"--workdir {tmp_path / 'absent'}: No such file or directory"


@pytest.mark.parametrize(
    ("given", "expanded", "celery_node"),
    [
        # what Celery 5 makes of each (celery.utils.nodenames: default_nodename, then host_format)
        ("w1@%h", "w1@vm.example.org", "w1@vm.example.org"),
        ("w1@%n", "w1@vm", "w1@vm"),
        ("w1@%d", "w1@example.org", "w1@example.org"),
        ("w%i%I@%n", "w0@vm", "w0@vm"),  # the worker's own process: index 0, no "-<index>"
        ("worker1", "worker1", "celery@worker1"),  # no "@": a host name, the name is celery's
        ("%h", "vm.example.org", "celery@vm.example.org"),
        ("100%%@%n", "100%@vm", "100%@vm"),
    ],
)
def test_node_names_expand_as_celery_expands_them(
    given: str, expanded: str, celery_node: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgtasks.compat.celery.utils.nodenames import default_nodename

    monkeypatch.setattr(socket, "gethostname", lambda: "vm.example.org")
    assert parse(f"worker -n {given}").hostname == expanded  # a native App's executor id
    assert default_nodename(expanded) == celery_node  # what a Celery app's worker is named


def test_an_unknown_node_name_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("worker -n w%x@%h")
    assert "argument -n/--hostname: unknown format %x in node name 'w%x@%h'" in capsys.readouterr().err


def test_worker_queue_exclusion_includes_and_prefetch_flags() -> None:
    from pgtasks.cli.worker import consumed_queues, import_included, prefetch_multiplier
    from pgtasks.engine.errors import ConfigurationError

    assert consumed_queues("a, b,c", "b") == ("a", "c") and consumed_queues("a", None) == ("a",)
    with pytest.raises(
        ConfigurationError, match="-X/--exclude-queues 'a,b' leaves no queue of 'a,b' to consume"
    ):
        consumed_queues("a,b", "a,b")
    with pytest.raises(ConfigurationError, match=r"no queue to consume: the queues ' , ' name none"):
        consumed_queues(" , ", None)  # an app's queues naming none; -Q is refused as it is parsed
    import_included("json, tests.compat.apps.ledger")  # imported, nothing raised
    with pytest.raises(
        ConfigurationError, match="-I/--include names 'no_such_module', which cannot be imported"
    ):
        import_included("json,no_such_module")
    assert prefetch_multiplier(parse("worker -A proj --disable-prefetch")) == 1
    assert prefetch_multiplier(parse("worker -A proj --disable-prefetch --prefetch-multiplier 8")) == 8
    assert prefetch_multiplier(parse("worker -A proj")) is None  # 4, more for short tasks
    assert parse("worker -A proj -l info").loglevel == "INFO"  # Celery's names, any case
    assert parse("beat -A proj --loglevel=fatal").loglevel == "FATAL"
    assert prefetch_multiplier(parse("worker -A proj --prefetch-multiplier 0")) is None  # Celery's 0
    assert prefetch_multiplier(parse("worker -A proj --disable-prefetch --prefetch-multiplier 0")) == 1
    with pytest.raises(
        ConfigurationError, match=r"--prefetch-multiplier must be >= 0 \(0: the default\), not -2"
    ):
        prefetch_multiplier(parse("worker -A proj --prefetch-multiplier -2"))
    assert parse("worker -A proj -X a,b -I m1,m2").exclude_queues == "a,b"
    beat = parse("beat -A proj --no-enable-remote-control")
    assert any("--no-enable-remote-control" in str(v) for v in vars(beat).values())

"""Secrets in logs: ``secret_args`` values never reach the worker's log, not on the "received"
line with ``log_task_args`` on, nor in the line of a failure; with the default
(``log_task_args`` off) no argument is logged at all. The worker tests run a real
``pgtasks worker`` subprocess and read everything it printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pgtasks import App, Client, ConfigurationError
from pgtasks.engine.redaction import MASK, SecretArgs, masked_inputs, scrub
from pgtasks.engine.serialization import Codec
from pgtasks.sysdb.records import Status
from tests.support.processes import stop, worker_process

LOGGED = "tests.security.apps.secret_app:logged"
QUIET = "tests.security.apps.secret_app:quiet"


# -- declaring secrets ---------------------------------------------------------------------
def login(user: str, password: str, /, pin: int, *rest: Any, token: str = "", **extra: Any) -> None:
    pass


def fixed(user: str, password: str) -> None:
    pass


@pytest.mark.parametrize(
    ("declared", "names", "positions"),
    [
        ("pin", {"pin"}, {2}),  # a name also hides the position it can be passed at
        (2, {"pin"}, {2}),  # and a position the name
        ("token", {"token"}, set()),
        (1, set(), {1}),  # positional-only: only a position
        ("password", set(), {1}),
        (7, set(), {7}),  # falls in *rest
        ("anything", {"anything"}, set()),  # goes to **extra
        (("pin", "token", 0), {"pin", "token"}, {0, 2}),
    ],
)
def test_secret_args_resolve_against_the_signature(
    declared: Any, names: set[str], positions: set[int]
) -> None:
    assert SecretArgs.for_function(login, declared) == SecretArgs(frozenset(names), frozenset(positions))


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ("pasword", "'pasword' is not one of its parameters"),
        (2, "position 2 is not a positional parameter"),
        (-1, "position -1"),
        (True, "neither a parameter name nor a position"),
        ((1.0,), "neither a parameter name nor a position"),
    ],
)
def test_a_secret_that_matches_nothing_is_refused(declared: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SecretArgs.for_function(fixed, declared)


@pytest.mark.parametrize("star", ["rest", "extra"])
def test_star_parameters_cannot_be_secrets_as_a_whole(star: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"name the parameters themselves, not \*{star}"):
        SecretArgs.for_function(login, star)


def test_a_misspelt_secret_fails_when_the_task_is_registered(sqlite_url: str) -> None:
    app = App("sec", database_url=sqlite_url)
    with pytest.raises(ConfigurationError, match="'passwrod' is not one of its parameters"):
        app.task(name="sec.typo", secret_args=("passwrod",))(fixed)
    assert "sec.typo" not in app.registered_tasks
    task = app.task(name="sec.ok", secret_args="password")(fixed)
    assert task.definition.options["secret_args"] == SecretArgs(frozenset({"password"}), frozenset({1}))
    assert app.task(name="sec.none")(fixed).definition.options == {}


def test_masking_hides_values_wherever_they_are_passed() -> None:
    secrets = SecretArgs.for_function(fixed, ["password"])
    codec = Codec()
    for args, kwargs in ((["ann", "s3cr3t"], {}), (["ann"], {"password": "s3cr3t"})):
        tag, text = codec.dumps_inputs("t", tuple(args), kwargs)
        shown, hidden = masked_inputs(codec, secrets, tag, text, "t")
        assert "s3cr3t" not in shown and "ann" in shown and f'"{MASK}"' in shown
        assert hidden == ("s3cr3t",)
    nested = SecretArgs(frozenset({"c"}))
    hidden = nested.hidden_texts([], {"c": {"number": "4111 1111", "cvv": 123, "lines": ["a\nb"]}})
    assert scrub("KeyError: '4111 1111' cvv=123 'a\\nb'", hidden) == f"KeyError: '{MASK}' cvv={MASK} '{MASK}'"
    assert masked_inputs(codec, secrets, "json", "not json", "t") == ("<arguments not shown: unreadable>", ())
    circular: list[Any] = []
    circular.append(circular)  # pickle carries it; the log line cannot show it
    pickled = Codec("pickle", frozenset({"pickle"}))
    tag, text = pickled.dumps_inputs("t", (circular, "s3cr3t"), {})
    assert masked_inputs(pickled, secrets, tag, text, "t") == ("<arguments not shown: not displayable>", ())


# -- a real worker -------------------------------------------------------------------------
def run_worker(
    client: Client,
    database_url: str,
    tmp_path: Path,
    app: str,
    sends: list[tuple[str, list[Any], dict[str, Any]]],
    pool: str = "threads",
) -> tuple[str, list[str]]:
    """Start a worker for ``app``, send the tasks, wait until each has finished, stop the
    worker; return everything it printed and the task ids."""
    worker = worker_process(database_url, tmp_path / "ledger", f"sec-{pool}", app=app, pool=pool)
    try:
        ids = [client.enqueue(name, args, kwargs).id for name, args, kwargs in sends]
        for task_id in ids:
            assert client.engine.wait(task_id, timeout=60).status.is_terminal
    finally:
        out = stop(worker)
    assert worker.returncode == 0, out
    for task_id in ids:  # an outcome is logged before it is written, so it is in `out`
        assert f"[{task_id}] received" in out, out
    return out, ids


@pytest.fixture
def client(database_url: str) -> Iterator[Client]:
    client = Client(database_url)
    yield client
    client.close()


def test_secret_arguments_are_masked_when_arguments_are_logged(
    client: Client, database_url: str, tmp_path: Path
) -> None:
    out, ids = run_worker(
        client,
        database_url,
        tmp_path,
        LOGGED,
        [
            ("secret.login", ["visible-user-1", "PW-SECRET-1"], {"token": "TOKEN-SECRET-2"}),
            ("secret.login", ["visible-user-2"], {"password": "PW-SECRET-3", "token": "TOKEN-SECRET-4"}),
            ("secret.charge", ["visible-user-3", "4111-SECRET-5", 42], {}),
        ],
    )
    assert "visible-user-1" in out and "visible-user-2" in out  # arguments are logged...
    assert out.count(f'"{MASK}"') == 5  # ...but not these five
    assert f"[{ids[0]}] succeeded" in out and f"[{ids[1]}] succeeded" in out
    assert (
        f"[{ids[2]}] raised unexpected" in out
        and f"ValueError: card {MASK} of visible-user-3 declined for 42" in out
    )
    assert "SECRET" not in out, out
    # Masking is for the log only: the task ran with, and the database keeps, the real values.
    assert client.AsyncResult(ids[0]).get(timeout=1) == "visible-user-1 logged in"
    record = client.engine.get_task(ids[1])
    assert record is not None and record.status is Status.SUCCESS
    stored = client.engine.codec.loads_inputs(record.serialization, record.inputs, record.name)
    assert stored == (["visible-user-2"], {"password": "PW-SECRET-3", "token": "TOKEN-SECRET-4"})


def test_no_argument_is_logged_by_default(client: Client, database_url: str, tmp_path: Path) -> None:
    out, ids = run_worker(
        client,
        database_url,
        tmp_path,
        QUIET,
        [
            ("plain.echo", ["ARG-VALUE-1"], {"extra": {"k": "ARG-VALUE-2"}}),
            ("plain.boom", ["ARG-VALUE-3"], {}),
            ("plain.charge", ["ARG-VALUE-4"], {}),
        ],
        pool="prefork",
    )
    assert f"[{ids[0]}] succeeded" in out
    assert f"[{ids[1]}] raised unexpected" in out and "RuntimeError: boom" in out
    assert f"[{ids[2]}] raised unexpected" in out and f"KeyError: '{MASK}'" in out
    assert "ARG-VALUE" not in out, out

"""Statements sent in one blocking libpq call (pgtasks.sysdb.one_call) give what psycopg's
``execute`` gives: the same rows and values, the same errors, a lost connection as an
OperationalError; prepared once per session, or never (behind a transaction pool). The same
holds when the statement is sent and its reply waited for (``interruptible``), where a signal
handler's exception ends the wait, cancels the statement and leaves the session usable."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import psycopg
import pytest

from pgtasks.sysdb.one_call import OneCallStatement, run
from pgtasks.sysdb.pg_arrays import Int8Array, TextArray
from pgtasks.sysdb.pg_sessions import is_unavailable
from tests.support.inprocess import wait_for

ECHO = OneCallStatement.parse(
    "echo",
    "SELECT t, n, %(label)s::text AS label, '100%%' AS pct"
    " FROM unnest(%(texts)b::text[], %(numbers)b::bigint[]) AS u(t, n) WHERE %(label)s::text IS NOT NULL",
)
PARAMS: dict[str, Any] = {
    "texts": TextArray(["a", None, "h\u00e9 \u2603", "x" * 5000]),
    "numbers": Int8Array([1, 2**62, None, -5]),
    "label": "l",
}


@pytest.fixture(params=[False, True], ids=["one-call", "interruptible"])
def interruptible(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_placeholders_become_numbered_parameters() -> None:
    assert ECHO.keys == ("label", "texts", "numbers")
    assert ECHO.text.decode().startswith(
        "SELECT t, n, $1::text AS label, '100%' AS pct FROM unnest($2::text[], $3"
    )
    assert ECHO.text.decode().endswith("WHERE $1::text IS NOT NULL")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT %(a)s, %(a)b", "statement bad: %(a) is sent in two formats"),
        ("SELECT %(a)x", "statement bad: a placeholder that is not %(name)s, b or t"),
    ],
)
def test_a_statement_psycopg_would_not_send_is_refused(sql: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        OneCallStatement.parse("bad", sql)
    assert str(raised.value) == message


@pytest.mark.parametrize("prepare", [True, False])
def test_rows_and_values_are_psycopgs(pg_server_url: str, prepare: bool, interruptible: bool) -> None:
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        expected = conn.execute(
            "SELECT t, n, %(label)s::text AS label, '100%%' AS pct"
            " FROM unnest(%(texts)b::text[], %(numbers)b::bigint[]) AS u(t, n)",
            PARAMS,
        ).fetchall()
        columns, rows = run(conn, ECHO, PARAMS, prepare, interruptible)
        again = run(conn, ECHO, PARAMS, prepare, interruptible)
        prepared = conn.execute(
            "SELECT name FROM pg_prepared_statements WHERE name LIKE 'pgtasks_echo_%'"
        ).fetchall()
    assert columns == ["t", "n", "label", "pct"]
    assert (
        rows
        == expected
        == [
            ("a", 1, "l", "100%"),
            (None, 2**62, "l", "100%"),
            ("h\u00e9 \u2603", None, "l", "100%"),
            ("x" * 5000, -5, "l", "100%"),
        ]
    )
    assert again == (columns, rows)
    assert len(prepared) == (1 if prepare else 0)


def test_a_session_that_forgot_the_statement_prepares_it_again(
    pg_server_url: str, interruptible: bool
) -> None:
    # DISCARD ALL: what a pooler's reset query or an operator does to a session.
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        first = run(conn, ECHO, PARAMS, True, interruptible)
        conn.execute("DISCARD ALL")
        assert run(conn, ECHO, PARAMS, True, interruptible) == first
        prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    assert prepared == (1,)


def test_a_server_error_is_psycopgs_error(pg_server_url: str, interruptible: bool) -> None:
    fails = OneCallStatement.parse("fails", "SELECT 1 / %(zero)s::int")
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        for prepare in (True, False):
            with pytest.raises(psycopg.errors.DivisionByZero):
                run(conn, fails, {"zero": 0}, prepare, interruptible)
        assert run(conn, fails, {"zero": 1}, True, interruptible) == (["?column?"], [(1,)])


def test_a_lost_connection_is_an_outage(pg_server_url: str, interruptible: bool) -> None:
    with (
        psycopg.connect(pg_server_url, autocommit=True) as conn,
        psycopg.connect(pg_server_url, autocommit=True) as admin,
    ):
        run(conn, ECHO, PARAMS, True)
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError) as raised:
            run(conn, ECHO, PARAMS, True, interruptible)
    assert is_unavailable(raised.value)
    assert conn.broken


def test_a_statement_larger_than_the_sockets_buffer_is_sent_whole(pg_server_url: str) -> None:
    big = {"texts": TextArray(["y" * 4_000_000, "z"]), "numbers": Int8Array([1, 2]), "label": "l"}
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        _, rows = run(conn, ECHO, big, True, interruptible=True)
    assert [(len(t), n) for t, n, _, _ in rows] == [(4_000_000, 1), (1, 2)]


class Interrupted(Exception):
    """What the test's signal handler raises, as a soft time limit's handler does."""


def test_a_signal_during_the_wait_cancels_the_statement_and_leaves_the_session_usable(
    pg_server_url: str,
) -> None:
    sleeps = OneCallStatement.parse("sleeps", "SELECT pg_sleep(%(seconds)s::float8) IS NULL AS slept")
    main = threading.get_ident()

    def interrupt(_signum: int, _frame: object) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with (
            psycopg.connect(pg_server_url, autocommit=True) as conn,
            psycopg.connect(pg_server_url, autocommit=True) as admin,
        ):
            pid = conn.info.backend_pid

            def signal_once_it_sleeps() -> None:
                wait_for(lambda: _state(admin, pid) == ("active", "PgSleep"), what="the sleep to start")
                signal.pthread_kill(main, signal.SIGUSR1)

            sender = threading.Thread(target=signal_once_it_sleeps)
            sender.start()
            started = time.monotonic()
            with pytest.raises(Interrupted):
                run(conn, sleeps, {"seconds": 60}, True, interruptible=True)
            sender.join()
            assert time.monotonic() - started < 30  # not the whole sleep
            assert _state(admin, pid)[0] == "idle"  # cancelled, its reply read
            assert run(conn, ECHO, PARAMS, True, interruptible=True)[1][0] == ("a", 1, "l", "100%")
    finally:
        signal.signal(signal.SIGUSR1, previous)


def _state(admin: psycopg.Connection[Any], pid: int) -> tuple[str, str | None]:
    row = admin.execute("SELECT state, wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    assert row is not None
    return row[0], row[1]

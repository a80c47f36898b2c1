"""Statements sent as one blocking libpq call: one wait outside the GIL per round trip.

psycopg's ``execute`` sends a statement and reads its reply in several steps (the send, the
flush, each wait for the socket), and each is a system call made without the GIL. A thread
that shares the interpreter with dozens of others waits to take the GIL back after every one
of them. The checkpoint writers are such threads, and every task of their batch waits for
them: in a threads ``-c 32`` drain of three-step tasks a batch of 8 checkpoints took 1.35 ms
as the writer saw it, against 0.23 ms for a round of 8 rows sent alone, while the writer's
server session sat idle waiting for it (docs/performance.md, stop 50). ``PQexecPrepared``
(``PQexecParams`` behind a transaction-pooling PgBouncer) does the whole round trip in one
call that leaves the GIL once: 9 to 19% more three-step tasks per second on the threads
pools (medians of three alternating drains). A prefork child, which has the interpreter to
itself, writes its own checkpoints this way too and gains as much from psycopg's
per-statement work left out.

The statements keep the text of ``sql/postgres.sql``: their ``%(name)b`` / ``%(name)s``
placeholders become ``$1``, ``$2``... once, and the parameters are dumped by the connection's
own adapters (psycopg's ``Transformer``), so the values and their types are exactly what
``execute`` would send. A server-side prepared statement is named after the statement and
its parameter types, and prepared on a session the first time the server says it does not
know it there.

A blocking libpq call cannot be interrupted: a signal's handler runs only once it returns.
Signals reach the main thread only, so a caller there (one producer's ``delay()``) asks for
``interruptible``: the statement is sent, and its reply waited for on the socket (still one
wait without the GIL when the reply comes in one piece); Ctrl-C or a soft time limit during
the wait cancels the statement first, as psycopg's ``execute`` does on Ctrl-C. A single
``delay()`` this way costs its thread about 15% less CPU than through ``execute``: 6% more
a second from one producer thread, 18% more from sixteen (medians of four alternating runs,
docs/performance.md, stop 51).
"""

from __future__ import annotations

import contextlib
import re
import select
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer

# A placeholder, or a literal percent sign written twice (psycopg's rules).
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\)([sbt])|(%))")
_FORMATS = {"s": PyFormat.AUTO, "b": PyFormat.BINARY, "t": PyFormat.TEXT}
_UNKNOWN_STATEMENT = b"26000"  # invalid_sql_statement_name: not prepared on this session
_names: dict[tuple[str, tuple[int, ...]], bytes] = {}  # see _prepared_name


@dataclass(frozen=True)
class OneCallStatement:
    """A statement of ``sql/postgres.sql`` in libpq's form."""

    name: str
    text: bytes  # with $n placeholders
    keys: tuple[str, ...]  # the parameter of each $n
    formats: tuple[PyFormat, ...]

    @classmethod
    def parse(cls, name: str, sql: str) -> OneCallStatement:
        """Number the named placeholders of ``sql`` (a name used twice is one parameter)."""
        keys: list[str] = []
        formats: list[PyFormat] = []

        def number(match: re.Match[str]) -> str:
            if match.group(3):
                return "%"
            key, kind = match.group(1), match.group(2)
            if key not in keys:
                keys.append(key)
                formats.append(_FORMATS[kind])
            elif formats[keys.index(key)] != _FORMATS[kind]:
                raise ValueError(f"statement {name}: %({key}) is sent in two formats")
            return f"${keys.index(key) + 1}"

        text = _PLACEHOLDER.sub(number, sql)
        if "%(" in text:
            raise ValueError(f"statement {name}: a placeholder that is not %(name)s, b or t")
        return cls(name, text.encode(), tuple(keys), tuple(formats))


def run(
    conn: psycopg.Connection[Any],
    statement: OneCallStatement,
    params: dict[str, Any],
    prepare: bool,
    interruptible: bool = False,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``statement`` on ``conn`` (in autocommit) in one blocking call; its column names
    and rows. ``prepare``: as a server-side prepared statement (not through a transaction
    pool, which may hand each statement to another session). ``interruptible``: sent, then
    waited for, so that a signal's exception can end the wait (for the main thread). Raises
    the error psycopg would raise for the same reply."""
    transformer = Transformer(conn)
    dumped = transformer.dump_sequence([params[key] for key in statement.keys], statement.formats)
    # A None is sent as NULL by every exec_* of psycopg.pq; only exec_prepared's annotation says otherwise.
    values = cast("Sequence[bytes]", dumped)
    calls = _Calls(conn, interruptible)
    if prepare:
        types = transformer.types or ()
        name = _prepared_name(statement, types)
        result = calls.exec_prepared(name, values, transformer.formats)
        if result.error_field(pq.DiagnosticField.SQLSTATE) == _UNKNOWN_STATEMENT:
            _check(conn, calls.prepare(name, statement.text, types), pq.ExecStatus.COMMAND_OK)
            result = calls.exec_prepared(name, values, transformer.formats)
    else:
        result = calls.exec_params(statement.text, values, transformer.types, transformer.formats)
    _check(conn, result, pq.ExecStatus.TUPLES_OK)
    transformer.set_pgresult(result)
    columns = [(result.fname(i) or b"").decode() for i in range(result.nfields)]
    return columns, transformer.load_rows(0, result.ntuples, tuple)


class _Calls:
    """libpq's calls on ``conn``: each one blocking call, or (``interruptible``) sent, then
    waited for by :func:`_reply`."""

    def __init__(self, conn: psycopg.Connection[Any], interruptible: bool) -> None:
        self.conn, self.pgconn, self.interruptible = conn, conn.pgconn, interruptible

    def exec_prepared(
        self, name: bytes, values: Sequence[bytes], formats: Sequence[int] | None
    ) -> pq.abc.PGresult:
        if not self.interruptible:
            return self.pgconn.exec_prepared(name, values, formats)
        self.pgconn.send_query_prepared(name, values, formats)
        return _reply(self.conn)

    def prepare(self, name: bytes, text: bytes, types: Sequence[int]) -> pq.abc.PGresult:
        if not self.interruptible:
            return self.pgconn.prepare(name, text, types)
        self.pgconn.send_prepare(name, text, types)
        return _reply(self.conn)

    def exec_params(
        self, text: bytes, values: Sequence[bytes], types: Sequence[int] | None, formats: Sequence[int] | None
    ) -> pq.abc.PGresult:
        if not self.interruptible:
            return self.pgconn.exec_params(text, values, types, formats)
        self.pgconn.send_query_params(text, values, types, formats)
        return _reply(self.conn)


def _reply(conn: psycopg.Connection[Any]) -> pq.abc.PGresult:
    """The reply to the statement just sent on ``conn``'s (non-blocking) session, waiting for
    the socket without the GIL, once when the reply comes in one piece. A signal handler's
    exception during the wait (KeyboardInterrupt, a soft time limit) cancels the statement on
    the server and is raised once its reply is read, so the session is left idle and the
    statement has either committed or not run; psycopg's ``execute`` cancels on Ctrl-C only."""
    pgconn = conn.pgconn
    try:
        return _results(pgconn)
    except BaseException:
        with contextlib.suppress(Exception):  # a session already lost has nothing to cancel
            conn.cancel()
            _results(pgconn)
        raise


def _results(pgconn: pq.abc.PGconn) -> pq.abc.PGresult:
    """Send what libpq still holds of the statement, then read every result of it (libpq's
    rule before the next statement), each waited for on the socket so that no call blocks
    in libpq; the last one, or a lost connection's own error if the server sent none."""
    waiting = select.poll()
    fd = pgconn.socket
    if pgconn.flush():  # a statement larger than the socket's buffer: send the rest as it drains
        waiting.register(fd, select.POLLIN | select.POLLOUT)
        while pgconn.flush():
            waiting.poll()
            pgconn.consume_input()
    waiting.register(fd, select.POLLIN)
    last = None
    while True:
        pgconn.consume_input()
        while pgconn.is_busy():
            waiting.poll()
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            break
        last = result
    if last is None:  # nothing came: libpq has the reason
        raise psycopg.OperationalError(pgconn.error_message.decode("utf-8", "replace"))
    return last


def _prepared_name(statement: OneCallStatement, types: Sequence[int]) -> bytes:
    """The server-side name of ``statement`` with these parameter types (at most 63 bytes),
    made once per pair rather than at each call."""
    key = (statement.name, tuple(types))
    name = _names.get(key)
    if name is None:  # a race here makes the same name twice
        name = _names[key] = f"pgtasks_{statement.name}_{zlib.crc32(repr(key[1]).encode()):08x}".encode()
    return name


def _check(conn: psycopg.Connection[Any], result: pq.abc.PGresult, expected: pq.ExecStatus) -> None:
    if result.status == expected:
        return
    if result.status == pq.ExecStatus.FATAL_ERROR:
        if result.error_field(pq.DiagnosticField.SQLSTATE) is None:
            # libpq's own error, no reply from the server (a lost connection): psycopg's
            # execute raises OperationalError for it, which the caller retries on.
            raise psycopg.OperationalError(result.error_message.decode(conn.info.encoding, "replace"))
        raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
    status = pq.ExecStatus(result.status).name
    raise psycopg.InterfaceError(f"the server answered {status} where {expected.name} was expected")

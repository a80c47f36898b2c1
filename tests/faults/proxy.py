"""A TCP proxy between pgtasks processes and PostgreSQL, for network fault injection.

The proxy runs an asyncio loop on a daemon thread of the test process, listens on
``127.0.0.1:<free port>`` and forwards every connection to the server of the URL it was
given. Its mode is switched at runtime from the test thread; each call returns once the
change is in effect::

    with PgProxy(pg_url) as proxy:        # mode "pass"
        worker_process(proxy.url, ...)     # pg_url with host:port replaced (user, db, ?schema= kept)
        proxy.delay(0.2)                   # every forwarded message waits 0.2 s
        proxy.blackhole()                  # nothing flows either way; sockets stay open
        proxy.pass_()                      # held bytes flow again, in order (a healed partition)
        proxy.reset()                      # close every open connection now (TCP RST both ways)
        proxy.cut_after_commit(r"INSERT INTO \\S*operation_outputs", skip=1)
        wait_for(lambda: proxy.cuts)       # one Cut per connection cut
        proxy.blackhole_before_commit(r"INSERT INTO \\S*operation_outputs")
        wait_for(lambda: proxy.held)       # the statement whose COMMIT is held

``reset()`` is an action, not a mode: new connections are accepted at once afterwards.

``cut_after_commit(pattern, times, skip)`` makes the ambiguous commit: the client's commit
point is forwarded, the server's whole reply to it (up to its ReadyForQuery) is held back and
dropped, and both sides are closed, so the transaction is committed (or, if the reply held an
error, not: see :attr:`Cut.committed`) while the client only sees a lost connection. A
commit point is, on the frontend protocol:

- a ``COMMIT``/``END`` statement, sent as a simple query ('Q'; psycopg 3's
  ``conn.transaction()`` and ``conn.commit()`` do this) or through the extended protocol
  ('P' parse, 'B' bind, 'E' execute, 'S' sync; psycopg's pipeline mode does this), and
- a statement run outside a transaction block (autocommit: the simple query itself, or the
  'S' sync that ends an extended-protocol batch), which the server commits implicitly.

``pattern`` (a regular expression, searched case-insensitively) must match the commit's
statement: for an explicit transaction the last statement before its ``COMMIT``, for
autocommit the statement itself. The default matches any INSERT, UPDATE or DELETE. The first
``skip`` matching commits go through untouched; after ``times`` cuts the proxy returns to
``pass``. Statement texts are those the client sent in 'Q' and 'P' messages (a prepared
statement is followed by its name through 'B' and 'E').

``blackhole_before_commit(pattern, skip)`` blackholes everything from a matching commit
point on, holding the commit point: for an explicit transaction its ``COMMIT`` (the server
keeps the transaction open with its locks, as behind a network partition), for autocommit the
whole batch of the statement, as it was written in one piece (nothing of it reaches the
server). ``pass_()`` delivers what was held.

Everything else of the protocol (startup, SSL/GSS negotiation requests, cancel requests) is
forwarded as it comes. :meth:`PgProxy.backend_ports` gives the local ports of the proxy's
server-side sockets: ``pg_stat_activity.client_port`` of the sessions it carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")

PASS, DELAY, BLACKHOLE = "pass", "delay", "blackhole"
CUT, HOLD = "cut_after_commit", "blackhole_before_commit"
DEFAULT_CUT_PATTERN = r"\b(INSERT|UPDATE|DELETE)\b"
NEGOTIATION_CODES = (80877103, 80877104)  # SSLRequest, GSSENCRequest: the server answers 1 byte
CANCEL_CODE = 80877102
_COMMIT = re.compile(r"^\s*(COMMIT|END)(\s+(WORK|TRANSACTION))?\s*;?\s*$", re.IGNORECASE)
_OPENS = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION)\b", re.IGNORECASE)
_NOT_A_STATEMENT = re.compile(r"^\s*(SAVEPOINT|RELEASE|ROLLBACK\s+TO)\b", re.IGNORECASE)
_ABORTS = re.compile(r"^\s*(ROLLBACK|ABORT)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Cut:
    """One connection cut after a commit point."""

    statement: str  # the statement whose commit was cut
    committed: bool  # the server's held reply reported success
    at: float  # time.time() of the cut


class _Frames:
    """Splits one direction of a PostgreSQL stream into whole messages (type byte, int32
    length, body). ``startup`` streams begin with untyped messages (startup, SSL/GSS
    requests, cancel); ``raw`` single bytes (answers to SSL/GSS requests) are taken as they
    come; ``opaque`` gives up framing (encryption was accepted, or a cancel request)."""

    def __init__(self, startup: bool) -> None:
        self.buffer = bytearray()
        self.startup = startup
        self.raw = 0
        self.opaque = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The whole messages buffered so far, one at a time: the caller may change the
        framing state (``startup``, ``raw``, ``opaque``) before the next one is cut."""
        self.buffer += data
        while self.buffer:
            if self.opaque:
                size = len(self.buffer)
            elif self.raw:
                self.raw -= 1
                size = 1
            else:
                head = 4 if self.startup else 5
                if len(self.buffer) < head:
                    return
                size = struct.unpack_from("!i", self.buffer, head - 4)[0] + head - 4
                if len(self.buffer) < size:
                    return
            frame = bytes(self.buffer[:size])
            del self.buffer[:size]
            yield frame


def _cstring(body: bytes, start: int = 0) -> tuple[str, int]:
    end = body.index(b"\0", start)
    return body[start:end].decode("utf-8", "replace"), end + 1


@dataclass(eq=False)
class _Link:
    """One proxied connection and what its parsers know about it."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    up: _Frames = field(default_factory=lambda: _Frames(startup=True))  # client -> server
    down: _Frames = field(default_factory=lambda: _Frames(startup=False))  # server -> client
    tx_status: str = "I"  # from the server's last ReadyForQuery
    statements: dict[str, str] = field(default_factory=dict)  # prepared statement -> text
    portals: dict[str, str] = field(default_factory=dict)  # portal -> text
    batch: list[str] = field(default_factory=list)  # extended-protocol statements before Sync
    last_statement: str = ""  # of the open transaction block
    sent_batches: int = 0  # 'Q' and 'S' messages forwarded: each gets one ReadyForQuery
    replied_batches: int = 0  # ReadyForQuery messages seen
    cut_batch: int | None = None  # the batch whose reply is dropped, then the link cut
    cut_statement: str = ""
    cut_failed: bool = False  # the held reply has an ErrorResponse
    hold_whole_batch: bool = False  # a held autocommit batch is held from its first message
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class PgProxy:
    """The proxy (see the module docstring). Use it as a context manager, or call
    :meth:`start` and :meth:`close`."""

    def __init__(self, database_url: str) -> None:
        parts = urlsplit(database_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._parts = parts
        self._mode = PASS
        self._delay = 0.0
        self._pattern = re.compile(DEFAULT_CUT_PATTERN, re.IGNORECASE)
        self._cuts_left = 0
        self._skips_left = 0
        self.cuts: list[Cut] = []
        self.held: list[str] = []  # statements whose commit started a blackhole
        self.accepted = 0  # connections accepted since the start
        self._links: set[_Link] = set()
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pg-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> PgProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def close(self) -> None:
        """Close the listener and every connection, stop the loop."""
        if not self._thread.is_alive():
            return
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> PgProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The database URL with its host and port replaced by the proxy's."""
        user = self._parts.netloc.rpartition("@")[0]
        netloc = (user + "@" if user else "") + f"127.0.0.1:{self.port}"
        return urlunsplit(self._parts._replace(netloc=netloc))

    # -- modes ------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self._mode

    def pass_(self) -> None:
        """Forward everything as it comes (bytes held by a blackhole flow now)."""
        self._call(self._set(PASS))

    def delay(self, seconds: float) -> None:
        """Forward every message ``seconds`` late, in both directions."""
        self._call(self._set(DELAY, delay=seconds))

    def blackhole(self) -> None:
        """Stop forwarding in both directions; connections, new ones too, stay open."""
        self._call(self._set(BLACKHOLE))

    def cut_after_commit(self, pattern: str | None = None, times: int = 1, skip: int = 0) -> None:
        """Let ``skip`` commits whose statement matches ``pattern`` through, then cut the next
        ``times`` ones after the server committed and before its reply reaches the client;
        then back to ``pass``."""
        regex = re.compile(pattern or DEFAULT_CUT_PATTERN, re.IGNORECASE | re.DOTALL)
        self._call(self._set(CUT, pattern=regex, times=times, skip=skip))

    def blackhole_before_commit(self, pattern: str | None = None, skip: int = 0) -> None:
        """Let ``skip`` matching commits through; at the next one, hold its commit point (a
        ``COMMIT``, or an autocommit statement's whole batch) and blackhole every connection,
        as :meth:`blackhole` does. :meth:`pass_` delivers what was held."""
        regex = re.compile(pattern or DEFAULT_CUT_PATTERN, re.IGNORECASE | re.DOTALL)
        self._call(self._set(HOLD, pattern=regex, times=1, skip=skip))

    def reset(self) -> int:
        """Close every open connection abruptly; returns how many there were."""
        return self._call(self._reset())

    def open_connections(self) -> int:
        return len(self._links)

    def backend_ports(self) -> list[int]:
        """Local ports of the proxy's sockets to the server (``pg_stat_activity.client_port``)."""
        return self._call(self._ports())

    # -- the loop side ----------------------------------------------------------------------
    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _start(self) -> None:
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._reset()

    async def _set(
        self,
        mode: str,
        delay: float = 0.0,
        pattern: re.Pattern[str] | None = None,
        times: int = 0,
        skip: int = 0,
    ) -> None:
        self._mode, self._delay, self._cuts_left, self._skips_left = mode, delay, times, skip
        if pattern is not None:
            self._pattern = pattern
        if mode == BLACKHOLE:
            self._flowing.clear()
        else:
            self._flowing.set()

    async def _reset(self) -> int:
        links = list(self._links)
        for link in links:
            self._abort(link)
        return len(links)

    async def _ports(self) -> list[int]:
        ports = []
        for link in self._links:
            sock = link.server.get_extra_info("sockname")
            if sock:
                ports.append(int(sock[1]))
        return ports

    def _abort(self, link: _Link) -> None:
        """Close both sides with an RST (SO_LINGER 0), dropping whatever is buffered."""
        for writer in (link.client, link.server):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        self._links.discard(link)
        for task in link.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(client=writer, server=up_writer)
        self._links.add(link)
        link.tasks = [
            asyncio.ensure_future(self._pump(link, reader, up_writer, upstream=True)),
            asyncio.ensure_future(self._pump(link, up_reader, writer, upstream=False)),
        ]

    async def _pump(
        self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: bool
    ) -> None:
        frames = link.up if upstream else link.down
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                # What one read brought is forwarded in one write, as the sender wrote it (a
                # client writes a whole batch at once): a blackhole never splits a batch.
                await self._flowing.wait()
                if self._mode == DELAY:
                    await asyncio.sleep(self._delay)
                    await self._flowing.wait()
                out = bytearray()
                for frame in frames.feed(data):
                    if link not in self._links:
                        return
                    if upstream:
                        self._from_client(link, frame)
                        if not self._flowing.is_set():  # a held commit point
                            if not link.hold_whole_batch:  # a COMMIT: what came before goes on
                                writer.write(bytes(out))
                                out.clear()
                            await self._flowing.wait()
                        out += frame
                    elif self._from_server(link, frame):
                        out += frame
                if link not in self._links:
                    return
                writer.write(bytes(out))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            return
        if link in self._links:  # one side closed: close the other, as TCP would
            self._links.discard(link)
            writer.close()
            for task in link.tasks:
                if task is not asyncio.current_task():
                    task.cancel()
            other = link.server if writer is link.client else link.client
            other.close()

    # -- protocol ---------------------------------------------------------------------------
    def _from_client(self, link: _Link, frame: bytes) -> None:
        """Follow the client's messages: statements, transaction blocks, commit points."""
        frames = link.up
        if frames.opaque:
            return
        if frames.startup:
            code = struct.unpack_from("!i", frame, 4)[0] if len(frame) >= 8 else 0
            if code in NEGOTIATION_CODES:
                link.down.raw += 1
            elif code == CANCEL_CODE:
                frames.opaque = True
            else:  # the startup message: its reply ends with a ReadyForQuery too
                frames.startup = False
                link.sent_batches += 1
            return
        kind, body = frame[:1], frame[5:]
        if kind == b"Q":
            text, _ = _cstring(body)
            link.sent_batches += 1
            self._statements_done(link, [text])
        elif kind == b"P":
            name, at = _cstring(body)
            text, _ = _cstring(body, at)
            link.statements[name] = text
        elif kind == b"B":
            portal, at = _cstring(body)
            name, _ = _cstring(body, at)
            link.portals[portal] = link.statements.get(name, "")
        elif kind == b"E":
            portal, _ = _cstring(body)
            link.batch.append(link.portals.get(portal, ""))
        elif kind == b"C" and body[:1] == b"S":
            link.statements.pop(_cstring(body, 1)[0], None)
        elif kind == b"S":
            link.sent_batches += 1
            batch, link.batch = link.batch, []
            self._statements_done(link, batch)

    def _statements_done(self, link: _Link, texts: list[str]) -> None:
        """A batch ends ('Q' or 'S'): is it a commit point, and is it to be cut?"""
        texts = [t for t in texts if t.strip()]
        if not texts:
            return
        in_block = link.tx_status in ("T", "E")
        committed: str | None = None
        explicit = False
        for text in texts:
            if _COMMIT.match(text):
                committed = link.last_statement
                explicit = True
                in_block = False
            elif _OPENS.match(text):
                in_block = True
                link.last_statement = ""
            elif _NOT_A_STATEMENT.match(text):
                continue
            elif _ABORTS.match(text):
                in_block = False
                link.last_statement = ""
            elif in_block:
                link.last_statement = text
        if committed is None and link.tx_status == "I" and not in_block:
            committed = texts[-1]  # autocommit: the server commits this batch implicitly
        if (
            committed is not None
            and self._mode in (CUT, HOLD)
            and self._cuts_left > 0
            and link.cut_batch is None
            and self._pattern.search(committed)
        ):
            if self._skips_left > 0:
                self._skips_left -= 1
                return
            self._cuts_left -= 1
            if self._mode == HOLD:
                self.held.append(committed)
                link.hold_whole_batch = not explicit
                self._mode = BLACKHOLE
                self._flowing.clear()
                return
            if self._cuts_left == 0:
                self._mode = PASS
            link.cut_batch = link.sent_batches
            link.cut_statement = committed

    def _from_server(self, link: _Link, frame: bytes) -> bool:
        """Follow the server's replies; False drops the frame (the reply of a cut commit)."""
        if link.down.opaque or len(frame) < 5:
            if len(frame) == 1 and frame in (b"S", b"G"):  # encryption accepted: stop parsing
                link.up.opaque = link.down.opaque = True
            return True
        kind = frame[:1]
        held = link.cut_batch is not None and link.replied_batches == link.cut_batch - 1
        if kind == b"Z":
            link.replied_batches += 1
            link.tx_status = frame[5:6].decode()
        if not held:
            return True
        if kind == b"E":
            link.cut_failed = True
        if kind == b"Z":
            self.cuts.append(Cut(link.cut_statement, not link.cut_failed, time.time()))
            self._abort(link)
        return False

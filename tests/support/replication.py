"""A primary and a streaming-replication standby on this machine (PostgreSQL's own binaries):
the standby is made with pg_basebackup and follows the primary, synchronously or not, until
it is promoted."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.support.pgserver import PostgresServer, find_pg_bin, free_port

STANDBY_NAME = "standby1"


@dataclass
class ReplicatedPair:
    """``primary`` and ``standby``; ``url`` names both hosts (libpq tries them in order and
    keeps the one that accepts writes)."""

    synchronous: bool = True
    primary: PostgresServer = field(init=False)
    standby: PostgresServer = field(init=False)

    def start(self, timeout: float = 60.0) -> ReplicatedPair:
        common = ("wal_level=replica", "max_wal_senders=5", "wal_keep_size=256MB", "hot_standby=on")
        # Only the primary waits for a synchronous standby: once promoted, the standby has
        # none, and would otherwise wait for one on every commit.
        own = (f"synchronous_standby_names={STANDBY_NAME}",) if self.synchronous else ()
        self.primary = PostgresServer(fsync=True, settings=common + own).start()
        base = Path(tempfile.mkdtemp(prefix="pgtasks-standby-"))
        self.standby = PostgresServer(fsync=True, port=free_port(), base=base, settings=common)
        if os.geteuid() == 0:
            shutil.chown(base, "postgres", "postgres")
            base.chmod(0o700)
        conninfo = f"host=127.0.0.1 port={self.primary.port} user=postgres application_name={STANDBY_NAME}"
        subprocess.run(
            self.primary._as_owner(
                [str(find_pg_bin() / "pg_basebackup"), "-D", str(self.standby.data_dir), "-d", conninfo, "-R"]
            ),
            check=True,
            capture_output=True,
        )
        self.standby.launch()
        self._wait_streaming(timeout)
        return self

    @property
    def url(self) -> str:
        return (
            f"postgresql://postgres@127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}/postgres"
            "?target_session_attrs=read-write&connect_timeout=2"
        )

    def _wait_streaming(self, timeout: float) -> None:
        wanted = "sync" if self.synchronous else "async"
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s", (STANDBY_NAME,)
                ).fetchone()
                if row is not None and row[0] == wanted:
                    return
                time.sleep(0.1)
        raise RuntimeError(f"the standby did not start streaming ({wanted}) in {timeout}s")

    def promote(self) -> None:
        """Make the standby the primary (``pg_promote``, waiting for it to accept writes)."""
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            promoted = conn.execute("SELECT pg_promote(wait => true, wait_seconds => 60)").fetchone()
        if not promoted or not promoted[0]:
            raise RuntimeError("the standby was not promoted within 60 s")

    def detach_standby(self) -> None:
        """Cut the standby off from the primary (its primary_conninfo now names no server): it
        receives no more WAL, as a standby whose network to the primary is down."""
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 connect_timeout=1'")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + 30
            streaming = "SELECT count(*) AS n FROM pg_stat_wal_receiver WHERE status = 'streaming'"
            while conn.execute(streaming).fetchone()[0]:  # type: ignore[index]
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby is still streaming from the primary")
                time.sleep(0.05)

    def destroy(self) -> None:
        for server in (self.standby, self.primary):
            server.destroy()

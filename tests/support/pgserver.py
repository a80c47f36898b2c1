"""A throwaway PostgreSQL server for tests, benchmarks and load tests.

``initdb`` into a temporary directory, start ``postgres`` on a free loopback port, stop and
delete everything at the end. As root (sessions and CI), the server runs as the unprivileged
``postgres`` user through ``runuser``, because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_BIN_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")


def find_pg_bin() -> Path:
    """The folder holding initdb and postgres: PGTASKS_PG_BIN, a known path, or PATH."""
    configured = os.environ.get("PGTASKS_PG_BIN")
    candidates = [configured] if configured else list(PG_BIN_CANDIDATES)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists():
            return Path(folder)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError(
        "PostgreSQL server binaries (initdb, postgres) not found: install PostgreSQL 15 "
        "(apt-get install postgresql-15), set PGTASKS_PG_BIN, or point "
        "PGTASKS_TEST_DATABASE_URL at an existing server"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """One running throwaway server; ``url`` connects to its ``postgres`` database."""

    fsync: bool = False
    port: int = field(default_factory=free_port)
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pgtasks-pg-")))
    process: subprocess.Popen[bytes] | None = None
    settings: tuple[str, ...] = ()  # more server settings, "name=value" each

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_owner(self, argv: list[str]) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    def start(self, timeout: float = 60.0) -> PostgresServer:
        pg_bin = find_pg_bin()
        self.base.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres", "postgres")
            os.chmod(self.base, 0o700)
        if not self.data_dir.exists():
            subprocess.run(
                self._as_owner(
                    [
                        str(pg_bin / "initdb"),
                        "-D",
                        str(self.data_dir),
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "--encoding=UTF8",
                        "--no-sync",
                    ]
                ),
                check=True,
                capture_output=True,
            )
        self.launch(pg_bin, timeout)
        return self

    def launch(self, pg_bin: Path | None = None, timeout: float = 60.0) -> None:
        """Start (or restart) the server process on the existing data directory."""
        pg_bin = pg_bin or find_pg_bin()
        argv = [
            str(pg_bin / "postgres"),
            "-D",
            str(self.data_dir),
            "-p",
            str(self.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.base}",
            "-c",
            "max_connections=300",
            "-c",
            f"fsync={'on' if self.fsync else 'off'}",
            "-c",
            "shared_buffers=128MB",
            "-c",
            "log_min_messages=warning",
        ]
        for setting in self.settings:
            argv += ["-c", setting]
        with open(self.base / "server.log", "ab") as log:  # the child keeps its own copy
            self.process = subprocess.Popen(self._as_owner(argv), stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited: {(self.base / 'server.log').read_text()[-2000:]}")
            ready = subprocess.run(
                [str(pg_bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"], check=False
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("postgres did not become ready in time")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (SIGINT) or ``immediate`` (SIGQUIT), keeping the data."""
        if self.process is None:
            return
        signal_for_mode = {"smart": 15, "fast": 2, "immediate": 3}[mode]
        # The server runs as another user: signal it through runuser's child via pg_ctl-style kill.
        subprocess.run(
            self._as_owner(["kill", f"-{signal_for_mode}", str(self._postmaster_pid())]), check=False
        )
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def _postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


if __name__ == "__main__":
    server = PostgresServer().start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.destroy()

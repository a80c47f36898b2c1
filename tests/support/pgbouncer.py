"""Debian's PgBouncer in transaction pooling mode in front of a test server, for the suites
run through it (`PGTASKS_TEST_THROUGH=pgbouncer`). As root, it runs as the ``postgres`` user
(PgBouncer refuses to run as root)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.pgserver import free_port

PGBOUNCER = os.environ.get("PGTASKS_PGBOUNCER", "/usr/sbin/pgbouncer")


@dataclass
class PgBouncer:
    """One running PgBouncer (transaction pooling) in front of ``server_url``'s server."""

    server_url: str
    port: int = field(default_factory=free_port)
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pgtasks-bouncer-")))
    process: subprocess.Popen[bytes] | None = None

    def url(self, database_url: str) -> str:
        """``database_url`` (a URL of the same server) through this PgBouncer, with
        ``pgbouncer=transaction`` and a direct ``listen_url``."""
        parts = urlsplit(database_url)
        user = parts.username or "postgres"
        separator = "&" if parts.query else ""
        from urllib.parse import quote

        listen = quote(database_url, safe="")
        return (
            f"postgresql://{user}@127.0.0.1:{self.port}{parts.path}?{parts.query}{separator}"
            f"pgbouncer=transaction&listen_url={listen}"
        )

    def start(self, timeout: float = 30.0) -> PgBouncer:
        server = urlsplit(self.server_url)
        config = self.base / "pgbouncer.ini"
        (self.base / "users.txt").write_text('"postgres" ""\n')
        config.write_text(
            "[databases]\n"
            f"* = host={server.hostname} port={server.port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.base / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "max_client_conn = 1000\n"
            "default_pool_size = 60\n"
            "ignore_startup_parameters = extra_float_digits\n"
            f"logfile = {self.base / 'pgbouncer.log'}\n"
            f"pidfile = {self.base / 'pgbouncer.pid'}\n"
        )
        argv = [PGBOUNCER, str(config)]
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres", "postgres")
            for path in self.base.iterdir():
                shutil.chown(path, "postgres", "postgres")
            argv = ["runuser", "-u", "postgres", "--", *argv]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.base / "pgbouncer.log"
                raise RuntimeError(f"pgbouncer exited: {log.read_text()[-2000:] if log.exists() else ''}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("pgbouncer did not start in time")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)

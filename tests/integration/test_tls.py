"""TLS with ``sslmode=verify-full``: a server whose certificate is signed by a CA made here,
pgtasks connecting through that URL, and the failures a wrong CA or host name give (clear,
without the password)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks import App
from pgtasks.sysdb.errors import DatabaseUnavailable
from tests.support.cli import run_pgtasks
from tests.support.inprocess import running_worker
from tests.support.pgserver import PostgresServer


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(folder: Path) -> None:
    """A CA, and a server certificate for localhost signed by it; another CA that signed nothing."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=pgtasks test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        cwd=folder,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        cwd=folder,
    )
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
        cwd=folder,
    )
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=another CA",
        "-keyout",
        "other.key",
        "-out",
        "other.crt",
        cwd=folder,
    )


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PostgresServer, Path]]:
    certs = tmp_path_factory.mktemp("certs")
    _certificates(certs)
    server = PostgresServer()
    server.base.mkdir(parents=True, exist_ok=True)
    for name in ("server.crt", "server.key"):
        shutil.copy(certs / name, server.base / name)
        os.chmod(server.base / name, 0o600)
        if os.geteuid() == 0:
            shutil.chown(server.base / name, "postgres", "postgres")
    server.settings = (
        "ssl=on",
        f"ssl_cert_file={server.base / 'server.crt'}",
        f"ssl_key_file={server.base / 'server.key'}",
    )
    server.start()
    subprocess.run(
        ["psql", server.url, "-qc", "ALTER ROLE postgres PASSWORD 'tls-secret-pw'"],
        check=True,
        capture_output=True,
    )
    try:
        yield server, certs
    finally:
        server.destroy()


def _url(server: PostgresServer, ca: Path, host: str = "localhost") -> str:
    return (
        f"postgresql://postgres:tls-secret-pw@{host}:{server.port}/postgres"
        f"?sslmode=verify-full&sslrootcert={ca}&schema=tls_test"
    )


def test_verify_full_works_and_wrong_certificates_fail_clearly(
    tls_server: tuple[PostgresServer, Path],
) -> None:
    server, certs = tls_server
    app = App("tls", database_url=_url(server, certs / "ca.crt"), poll_interval=0.05)

    @app.task(name="tls.add")
    def add(x: int, y: int) -> int:
        return x + y

    with running_worker(app):
        assert add.delay(20, 22).get(timeout=30) == 42
    app.close()

    for url, why in (
        (_url(server, certs / "other.crt"), "certificate verify failed"),
        (_url(server, certs / "ca.crt", host="127.0.0.1"), "does not match host name"),
    ):
        wrong = App("tls-wrong", database_url=url)
        with pytest.raises(DatabaseUnavailable, match=why) as caught:
            wrong.engine.admin.now_ms()
        assert "tls-secret-pw" not in str(caught.value)
        wrong.close()
        done = run_pgtasks("migrate", "--database-url", url)
        assert done.returncode != 0 and why in done.stderr
        assert "tls-secret-pw" not in done.stdout + done.stderr

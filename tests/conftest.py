"""Shared fixtures: a real PostgreSQL (started here unless PGTASKS_TEST_DATABASE_URL names
one) and SQLite files. Every test gets its own schema or file, so tests never see each
other's rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgtasks.sysdb import SystemDatabase, open_system_database
from tests.support.pgbouncer import PgBouncer
from tests.support.pgserver import PostgresServer
from tests.support.schemas import scratch_schema, with_schema, worker_role_url

DIALECTS = ("postgres", "sqlite")
AS_ROLE_ENV = "PGTASKS_TEST_AS_ROLE"
THROUGH_ENV = "PGTASKS_TEST_THROUGH"  # "pgbouncer": the PostgreSQL URLs go through PgBouncer


@pytest.fixture(scope="session")
def pgbouncer(pg_server_url: str) -> Iterator[PgBouncer | None]:
    """A transaction-pooling PgBouncer in front of the test server when
    PGTASKS_TEST_THROUGH=pgbouncer, else None."""
    if os.environ.get(THROUGH_ENV) != "pgbouncer":
        yield None
        return
    bouncer = PgBouncer(pg_server_url).start()
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """URL of the PostgreSQL server the suite uses (its ``postgres`` database)."""
    existing = os.environ.get("PGTASKS_TEST_DATABASE_URL")
    if existing:
        yield existing
        return
    server = PostgresServer().start()
    os.environ["PGTASKS_TEST_DATABASE_URL"] = server.url  # subprocesses inherit it
    try:
        yield server.url
    finally:
        os.environ.pop("PGTASKS_TEST_DATABASE_URL", None)
        server.destroy()


@pytest.fixture
def pg_url(pg_server_url: str, pgbouncer: PgBouncer | None) -> Iterator[str]:
    """A PostgreSQL URL whose ``?schema=`` is fresh for this test (dropped afterwards).

    With ``PGTASKS_TEST_AS_ROLE=worker`` the schema is migrated here, by the server's
    superuser, and the URL connects as the least-privilege worker role of `pgtasks roles`
    (rows only, no DDL): the tests then prove that role is enough."""
    # Each test migrates its own schema (~30 ms). Measured for issue 12 and not kept: a
    # template database per test (CREATE DATABASE ... TEMPLATE) costs ~220 ms; building the
    # schema from the declared DDL in one round trip saved ~1.4 s of a ~30 s run of the
    # PostgreSQL suites, less than the run-to-run noise, and would bypass migrate().
    with scratch_schema(pg_server_url) as schema:
        if os.environ.get(AS_ROLE_ENV) == "worker":
            url = worker_role_url(pg_server_url, schema)
        else:
            url = with_schema(pg_server_url, schema)
        yield url if pgbouncer is None else pgbouncer.url(url)


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """An empty effects ledger (tests/support/ledger.py) for the tasks of worker processes."""
    path = tmp_path / "effects.log"
    path.touch()
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'pgtasks.sqlite3'}"


@pytest.fixture(params=DIALECTS)
def database_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on PostgreSQL and once on SQLite."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return request.getfixturevalue("sqlite_url")


@pytest.fixture
def sysdb(database_url: str) -> Iterator[SystemDatabase]:
    db = open_system_database(database_url)
    db.migrate()
    yield db
    db.close()


# Modules whose tests share a module-scoped set-up (a worker, a browser, a server, a venv): under
# xdist each runs whole in one process, so that set-up is made once, not once in each process
# that gets one of its tests. They start first, the biggest first; every other test is handed
# out on its own as processes free up. (pytest-xdist's own --dist loadgroup would do this with
# an xdist_group mark, but its nodeid suffix is lost on pytest 9.2.)
WHOLE_MODULES = frozenset(
    {
        "tests/acceptance/test_dashboard.py",
        "tests/acceptance/test_flower_api.py",
        "tests/acceptance/test_waiting.py",
        "tests/compat/test_canvas_graph.py",
        "tests/compat/test_canvas_failures.py",
        "tests/faults/test_reconnect.py",
        "tests/integration/test_read_replica.py",
        "tests/realapps/test_celery_libraries.py",
    }
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "load":  # another --dist asked for: xdist's own
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WholeModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in WHOLE_MODULES else nodeid

    return WholeModules(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the passes run again through PgBouncer or as the worker role, leave out the tests
    that cannot reach the database those passes change: the passes act only through
    ``pg_url`` (see above), so a test without it (its own server, SQLite, no database) would
    run exactly as in the main pass. A test that asks for ``pg_url`` by name at run time is
    kept by its ``postgres`` parameter.

    And the projects under tests/realapps, the longest tests (venvs, migrations, their own
    suites), go first: under xdist they start early instead of running on alone at the end."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/realapps/"))
    if os.environ.get(THROUGH_ENV) != "pgbouncer" and os.environ.get(AS_ROLE_ENV) != "worker":
        return
    kept: list[pytest.Item] = []
    repeated: list[pytest.Item] = []
    for item in items:
        names = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        through = "pg_url" in names or "database_url" in names
        if through or (callspec is not None and "postgres" in callspec.id):
            kept.append(item)
        else:
            repeated.append(item)
    if repeated:
        config.hook.pytest_deselected(items=repeated)
        items[:] = kept


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures tests record with ``record_property("report", ...)`` (the failover
    counts), passed or failed, even from xdist workers: they are part of what a run shows."""
    lines = [
        str(value)
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        for name, value in getattr(report, "user_properties", [])
        if name == "report"
    ]
    if lines:
        terminalreporter.section("reports")
        for line in lines:
            terminalreporter.write_line(line)

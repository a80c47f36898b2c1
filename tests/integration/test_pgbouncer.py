"""pgtasks through Debian's PgBouncer in transaction pooling mode (``?pgbouncer=transaction``):
no startup options, no server-side prepared statements, LISTEN on the direct ``listen_url`` or
polling without one. The worker, canvas, beat and crash suites also run through it in
`make test` (PGTASKS_TEST_THROUGH=pgbouncer)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from pgtasks import App
from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.urls import parse_database_url, redact_url
from tests.support.inprocess import running_worker
from tests.support.pgbouncer import PgBouncer


@pytest.fixture
def bouncer(pg_server_url: str) -> Iterator[PgBouncer]:
    started = PgBouncer(pg_server_url).start()
    try:
        yield started
    finally:
        started.stop()


def _direct(pg_url: str) -> str:
    """The test's own direct URL, whatever PGTASKS_TEST_THROUGH says."""
    target = parse_database_url(pg_url)
    return target.listen_dsn + f"?schema={target.schema}" if target.transaction_pooling else pg_url


@pytest.mark.parametrize("listen", [True, False], ids=["listen_url", "polling"])
def test_tasks_run_through_a_transaction_pool(bouncer: PgBouncer, pg_url: str, listen: bool) -> None:
    direct = _direct(pg_url)
    url = bouncer.url(direct)
    if not listen:
        url = url.split("&listen_url=")[0]
    app = App("bounced", database_url=url, poll_interval=0.05)

    @app.task(name="b.add")
    def add(x: int, y: int) -> int:
        return x + y

    with running_worker(app) as worker:
        # More runs of each statement than psycopg's prepare threshold (5): none is prepared.
        assert [add.delay(i, 1).get(timeout=30) for i in range(12)] == list(range(1, 13))
        assert worker.listening is listen
    app.close()


def test_the_pooling_options_are_checked_and_secrets_stay_hidden() -> None:
    direct = "postgresql://app:dir3ct@db:5432/shop"
    url = (
        f"postgresql://app:s3cret@bouncer:6432/shop?pgbouncer=transaction&listen_url={quote(direct, safe='')}"
    )
    target = parse_database_url(url)
    assert target.transaction_pooling and target.listen_dsn == direct
    assert "pgbouncer" not in target.dsn and "listen_url" not in target.dsn
    shown = redact_url(url)
    assert "s3cret" not in shown and "dir3ct" not in shown and "listen_url=postgresql://app:***@db" in shown
    with pytest.raises(ConfigurationError, match="pgbouncer='statement' is not a pooling mode"):
        parse_database_url("postgresql://app@bouncer/shop?pgbouncer=statement")
    through = quote("postgresql://app@bouncer/shop?pgbouncer=transaction", safe="")
    with pytest.raises(ConfigurationError, match="listen_url must be a direct PostgreSQL URL"):
        parse_database_url(f"postgresql://app@bouncer/shop?pgbouncer=transaction&listen_url={through}")
    assert not parse_database_url("postgresql://app@db/shop?pgbouncer=session").transaction_pooling

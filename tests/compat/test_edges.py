"""Edge behaviours of Celery on a real `pgtasks worker` (one for the module), as the real
Celery 5.7 on Redis was seen doing them (tests/compat/apps/edges_probe.py holds the scenarios
and what each must observe, PGTASKS where pgtasks differs; test_celery_reference.py runs them
against the real Celery)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.apps import edges_app as proj
from tests.compat.apps.edges_probe import EXPECTED, PGTASKS, run
from tests.support.celery_worker import module_celery_worker

MODULE = "tests.compat.apps.edges_app"


@pytest.fixture(scope="module")
def ledger(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("edges")
    with module_celery_worker(proj.app, MODULE, pg_server_url, folder, "edges-w1", concurrency=2) as path:
        yield path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_as_celery(ledger: Path, name: str) -> None:
    assert run(name, ledger) == {**EXPECTED[name], **PGTASKS.get(name, {})}

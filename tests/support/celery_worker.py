"""A Celery test app pointed at the test's database, and a real `pgtasks worker` running it:
the body of the compat and canvas-crash fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.support.inprocess import wait_for
from tests.support.processes import stop, worker_process
from tests.support.schemas import scratch_schema, with_schema


class CeleryApp(Protocol):
    """What these helpers use of a Celery-shaped app (``pgtasks.compat``'s ``Celery``)."""

    conf: Any
    control: Any

    def set_current(self) -> None: ...

    def close(self) -> None: ...


@contextmanager
def celery_app_on(app: CeleryApp, url: str, ledger: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point ``app`` at ``url`` and make it current (shared tasks use the current app), tasks
    run in this process appending to ``ledger``; close the app at the end."""
    monkeypatch.setenv("PGTASKS_TEST_LEDGER", str(ledger))
    app.conf.broker_url = url
    app.set_current()
    try:
        yield
    finally:
        app.close()


@contextmanager
def celery_worker(
    app: CeleryApp,
    module: str,
    url: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    **options: Any,
) -> Iterator[Path]:
    """:func:`celery_app_on`, with a `pgtasks worker -A module` named ``name`` running until the
    end (``options`` go to :func:`worker_process`), which must not fail before it is ready.
    Yields the ledger."""
    with celery_app_on(app, url, ledger, monkeypatch):
        process = worker_process(url, ledger, name, app=module, **options)
        try:
            yield ledger
        finally:
            output = stop(process)  # piped, or written to a file
            if options.get("output") is not None:
                output = Path(options["output"]).read_text()
            assert "Traceback" not in output.split("ready.", 1)[0], output


@contextmanager
def module_celery_worker(
    app: CeleryApp, module: str, server_url: str, folder: Path, name: str, **options: Any
) -> Iterator[Path]:
    """:func:`celery_worker` shared by the tests of one module: on a schema of its own on
    ``server_url`` (dropped at the end), its ledger in ``folder``; yields the ledger once the
    worker answers ``ping`` (the tests' short waits do not include its start). Its output goes
    to ``folder / "worker.log"``: a pipe nobody reads until the end would fill up with the
    tracebacks of failing tasks and stop the worker."""
    with scratch_schema(server_url, prefix="w_") as schema, pytest.MonkeyPatch.context() as patch:
        url = with_schema(server_url, schema)
        log = folder / "worker.log"
        with celery_worker(app, module, url, folder / "ledger", patch, name, output=log, **options) as ledger:
            node = name if "@" in name else f"celery@{name}"  # -n without "@" names the host, as in Celery
            wait_for(lambda: node in (app.control.inspect().ping() or {}), timeout=60, what=f"worker {node}")
            yield ledger

"""``async def`` tasks and steps are refused when they are declared (issue 17, item 11): pgtasks
cannot run coroutines yet, and accepting them only moved the failure into the worker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pgtasks import App, ConfigurationError
from pgtasks.compat import Celery, shared_task

MESSAGE = "is an async function: pgtasks cannot run async tasks or steps yet"


async def fetch(url: str) -> str:
    return url


async def stream() -> AsyncIterator[int]:
    yield 1


@pytest.mark.parametrize("fn", [fetch, stream])
def test_native_tasks_and_steps_refuse_async_functions(tmp_path: Path, fn: object) -> None:
    app = App("aio", database_url=f"sqlite:///{tmp_path / 'a.sqlite3'}")
    with pytest.raises(ConfigurationError, match=f"task .*{MESSAGE}"):
        app.task(fn)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match=MESSAGE):
        app.task(name="aio.named")(fn)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=f"step .*{MESSAGE}"):
        app.step(fn)  # type: ignore[type-var]
    assert app.registered_tasks == {}
    app.close()


def test_celery_tasks_refuse_async_functions(tmp_path: Path) -> None:
    app = Celery("aio", broker=f"sqlite:///{tmp_path / 'c.sqlite3'}")
    with pytest.raises(ConfigurationError, match=MESSAGE):
        app.task(fetch)
    with pytest.raises(ConfigurationError, match=MESSAGE):
        app.task(bind=True)(fetch)
    with pytest.raises(ConfigurationError, match=MESSAGE):
        shared_task(fetch)
    with pytest.raises(ConfigurationError, match=MESSAGE):
        shared_task(name="aio.shared")(fetch)
    assert "aio.shared" not in app.tasks


def test_plain_functions_are_still_accepted(tmp_path: Path) -> None:
    app = App("aio", database_url=f"sqlite:///{tmp_path / 'p.sqlite3'}")

    @app.task
    def plain() -> int:
        return 1

    assert plain() == 1
    app.close()

"""``@app.task(pydantic=True)`` as Celery 5.5+ documents it, with a real `pgtasks worker` and
eagerly: model arguments validated from dicts, model results dumped, ``Optional`` handled,
``pydantic_strict`` / ``pydantic_context`` / ``pydantic_dump_kwargs`` honoured, invalid
arguments failing the task (not the worker), and a clear error without pydantic."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery
from celery.exceptions import ImproperlyConfigured

from tests.compat.apps import pydantic_app as proj
from tests.support.celery_worker import celery_app_on, celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of as lines


@pytest.fixture
def ledger(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    module, path = "tests.compat.apps.pydantic_app", tmp_path / "ledger"
    with celery_worker(proj.app, module, database_url, path, monkeypatch, "pydantic-w1", concurrency=2):
        yield path


def test_model_arguments_are_validated_and_model_results_dumped_in_a_worker(ledger: Path) -> None:
    order = {"sku": "tea", "quantity": "3"}  # lax mode: "3" becomes 3
    assert proj.price.delay(order, 2.5).get(timeout=60) == {"sku": "tea", "total": 7.5, "note": None}
    assert "price Order 3" in lines(ledger)  # the body saw an Order, not a dict
    assert proj.maybe_price.delay().get(timeout=60) is None
    assert proj.maybe_price.delay({"sku": "b", "quantity": 2}).get(timeout=60) == {
        "sku": "b",
        "total": 2.0,
        "note": None,
    }
    assert proj.bound.delay({"sku": "d", "quantity": 1}).get(timeout=60)["sku"] == "d@True"
    assert proj.shared_price.delay({"sku": "e", "quantity": 4}).get(timeout=60)["total"] == 8.0


def test_pydantic_options_are_honoured_in_a_worker(ledger: Path) -> None:
    assert proj.scaled.delay({"value": 4}).get(timeout=60) == 40  # pydantic_context={"factor": 10}
    assert f"context {proj.scaled.name} Celery" in lines(ledger)  # and celery_task_name, celery_app
    assert proj.without_none.delay({"sku": "c", "quantity": 1}).get(timeout=60) == {"sku": "c", "total": 1.5}
    assert proj.strict_price.delay({"sku": "s", "quantity": 5}).get(timeout=60) == 5
    refused = proj.strict_price.delay({"sku": "s", "quantity": "5"})  # strict: no str -> int
    with pytest.raises(Exception, match="valid integer"):
        refused.get(timeout=60)
    assert refused.state == "FAILURE"


def test_invalid_arguments_fail_the_task_not_the_worker(ledger: Path) -> None:
    bad = proj.price.delay({"sku": "tea"}, 1.0)  # no quantity
    with pytest.raises(Exception, match="quantity") as raised:
        bad.get(timeout=60)
    assert "Field required" in str(raised.value)
    assert bad.state == "FAILURE"
    # A model that is not the annotated one is not dumped (as Celery): it cannot be stored,
    # and the task says so instead of taking the worker down.
    odd = proj.other_model.delay({"sku": "x", "quantity": 1})
    with pytest.raises(Exception, match="Object of type Order is not JSON serializable"):
        odd.get(timeout=60)
    assert odd.state == "FAILURE"
    assert proj.price.delay({"sku": "ok", "quantity": 1}, 1.0).get(timeout=60)["total"] == 1.0
    wait_for(lambda: "price Order 1" in lines(ledger), timeout=10, what="the worker to go on")


def test_pydantic_tasks_eagerly_and_called_directly(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with celery_app_on(proj.app, database_url, tmp_path / "ledger", monkeypatch):
        proj.app.conf.task_always_eager = True
        try:
            assert proj.price.delay({"sku": "a", "quantity": 2}, 1.5).get() == {
                "sku": "a",
                "total": 3.0,
                "note": None,
            }
            assert proj.price.apply(({"sku": "a", "quantity": 1}, 1.0)).get()["total"] == 1.0
            assert proj.scaled({"value": 2}) == 20  # a direct call validates too
            with pytest.raises(Exception, match="valid integer"):
                proj.strict_price.delay({"sku": "s", "quantity": "1"}).get()
        finally:
            proj.app.conf.task_always_eager = False
    # The task object still looks like the function it wraps.
    assert proj.price.__name__ == "price" and proj.price.__wrapped__.__name__ == "price"
    assert proj.price.__doc__ and "Receipt" in proj.price.__doc__


def test_pydantic_true_without_pydantic_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic", None)  # import pydantic now fails
    app = Celery("nopydantic", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}", set_as_current=False)
    with pytest.raises(ImproperlyConfigured, match=r"pydantic=True, but pydantic is not installed"):

        @app.task(pydantic=True)
        def typed(order: dict) -> dict:
            return order

    @app.task  # without pydantic=True nothing asks for pydantic
    def plain(order: dict) -> dict:
        return order

    assert plain({"a": 1}) == {"a": 1}


def test_bad_pydantic_options_are_refused(tmp_path: Path) -> None:
    app = Celery("badopts", broker=f"sqlite:///{tmp_path / 'db.sqlite3'}", set_as_current=False)
    with pytest.raises(TypeError, match="pydantic_context must be a dict, not list"):

        @app.task(pydantic=True, pydantic_context=["factor"])
        def typed(order: dict) -> dict:
            return order


def test_a_refused_declaration_is_shared_with_no_later_app(tmp_path: Path) -> None:
    """``@app.task`` is shared with the apps finalized later only once made on its own app: a
    declaration refused there made every later app's finalize raise the same error."""
    app = Celery("refused", broker=f"sqlite:///{tmp_path / 'a.sqlite3'}", set_as_current=False)
    with pytest.raises(TypeError, match="pydantic_context must be a dict"):

        @app.task(pydantic=True, pydantic_context=["factor"])
        def refused(order: dict) -> dict:
            return order

    later = Celery("later", broker=f"sqlite:///{tmp_path / 'b.sqlite3'}", set_as_current=False)
    later.finalize()
    assert not any(name.endswith(".refused") for name in later.tasks)

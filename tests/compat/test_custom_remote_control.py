"""An application's own remote control commands (``@control_command``, ``@inspect_command``)
run in a real `pgtasks worker` that loaded them, through ``app.control.broadcast`` and the
``control`` / ``inspect`` commands, as in Celery."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgtasks.cli.main import main
from pgtasks.compat import install
from tests.support.celery_worker import celery_worker
from tests.support.inprocess import wait_for

install()

from celery.worker.control import Panel  # noqa: E402

from tests.compat.apps import control_app  # noqa: E402

MODULE = "tests.compat.apps.control_app"


def test_the_panel_registers_as_celerys() -> None:
    info = Panel.meta["increase_counter"]
    assert (info.type, info.signature, info.args, info.help) == (
        "control",
        "[N=1]",
        [("n", int)],
        "Add N to the worker's counter.",
    )
    assert (
        Panel.meta["current_counter"].type == "inspect"
        and Panel.data["counter_now"] is control_app.current_counter
    )
    assert Panel.register(lambda state: None, name="registered_directly") is Panel.data["registered_directly"]
    with pytest.raises(ValueError, match="'control' or 'inspect', not 'other'"):
        Panel.register(type="other")


def test_custom_commands_run_in_the_worker_and_reply(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    control = control_app.app.control
    with celery_worker(control_app.app, MODULE, pg_url, tmp_path / "ledger", monkeypatch, "w-custom"):
        node = "celery@w-custom"
        wait_for(
            lambda: node in (control.inspect().ping() or {}), timeout=60, what="the worker to answer ping"
        )
        assert control.broadcast("increase_counter", {"n": 2}, reply=True, timeout=30) == [
            {node: {"ok": "counter is 2"}}
        ]
        assert control.broadcast("increase_counter", reply=True, timeout=30) == [
            {node: {"ok": "counter is 3"}}
        ]
        expected = {"counter": 3, "app": "control", "same": True}
        assert control.broadcast("current_counter", reply=True, timeout=30) == [{node: expected}]
        assert control.broadcast("counter_now", reply=True, timeout=30) == [{node: expected}]  # its alias
        # an exception in a command is its error reply (kombu's repr), the worker goes on
        assert control.broadcast("broken_command", reply=True, timeout=30) == [
            {node: {"error": "RuntimeError('the command failed')"}}
        ]
        [[(_, internals)]] = [
            r.items() for r in control.broadcast("consumer_internals", reply=True, timeout=30)
        ]
        assert internals["error"].startswith("AttributeError(") and "qos" in internals["error"]
        assert control_app.add.delay(1, 2).get(timeout=60) == 3
        # the command line: the commands of the app, their arguments converted by their types
        capsys.readouterr()
        assert main(["-A", MODULE, "control", "increase_counter", "4", "-t", "30"]) == 0
        assert capsys.readouterr().out.startswith(f"->  {node}: OK\n        counter is 7")
        assert main(["-A", MODULE, "inspect", "current_counter", "-t", "30", "-j"]) == 0
        assert '"counter": 7' in capsys.readouterr().out
        assert main(["-A", MODULE, "control", "increase_counter", "x"]) == 2
        assert "pgtasks control increase_counter: n must be an integer, not 'x'" in capsys.readouterr().err
        assert main(["-A", MODULE, "control", "--list"]) == 0
        listing = capsys.readouterr().out
        assert "increase_counter [N=1]" in listing and "Add N to the worker's counter." in listing
        assert main(["-A", MODULE, "inspect", "--list"]) == 0
        assert "current_counter" in capsys.readouterr().out


def test_the_key_value_backend_base_is_served_and_pgtasks_backend_is_not_one() -> None:
    # Celery's t/integration imports it to tell a key/value backend from another.
    from celery.backends.base import BaseKeyValueStoreBackend, KeyValueStoreBackend

    assert issubclass(KeyValueStoreBackend, BaseKeyValueStoreBackend)
    assert not isinstance(control_app.app.backend, BaseKeyValueStoreBackend)

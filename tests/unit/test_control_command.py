"""``pgtasks control``'s arguments and the layout of workers' replies, as Celery's command
line reads and prints them (the commands against a live worker: tests/compat/test_cli.py)."""

from __future__ import annotations

import argparse

import pytest

from pgtasks.cli.compat_commands import inspect_listing
from pgtasks.cli.control_command import COMMANDS, command_listing, compile_arguments, run_control
from pgtasks.cli.main import main
from pgtasks.cli.replies import EX_UNAVAILABLE, pretty, print_command_replies, print_replies, say_reply
from pgtasks.engine.errors import ConfigurationError


def test_arguments_are_converted_as_celery_converts_them() -> None:
    assert compile_arguments("pool_grow", []) == {"n": 1}
    assert compile_arguments("pool_shrink", ["3"]) == {"n": 3}
    assert compile_arguments("time_limit", ["proj.add", "1.5", "3"]) == {
        "task_name": "proj.add",
        "soft": 1.5,
        "hard": 3.0,
    }
    assert compile_arguments("add_consumer", ["q"]) == {"queue": "q"}
    assert compile_arguments("terminate", ["KILL", "a", "b"]) == {"signal": "KILL", "task_id": ["a", "b"]}
    assert compile_arguments("revoke", ["a"]) == {"task_id": ["a"]}


@pytest.mark.parametrize(
    ("name", "words", "message"),
    [
        (
            "pool_grow",
            ["x"],
            "pgtasks control pool_grow: n must be an integer, not 'x'; usage: pool_grow [N=1]",
        ),
        ("time_limit", ["t", "soon"], "soft must be a number, not 'soon'"),
        (
            "rate_limit",
            ["proj.add"],
            "pgtasks control rate_limit: missing arguments; usage: rate_limit <task_name>",
        ),
        ("cancel_consumer", ["a", "b"], "pgtasks control cancel_consumer: too many arguments; usage:"),
        ("heartbeat", ["now"], "pgtasks control heartbeat: too many arguments; usage: heartbeat"),
        ("revoke", [], "pgtasks control revoke: missing arguments"),
        ("terminate", ["KILL"], "pgtasks control terminate: missing arguments"),
    ],
)
def test_bad_arguments_say_what_is_wrong_and_the_usage(name: str, words: list[str], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        compile_arguments(name, words)
    assert message in str(raised.value)


def _control(*words: str) -> argparse.Namespace:
    return argparse.Namespace(
        list=False,
        control=words[0] if words else None,
        arguments=list(words[1:]),
        destination=None,
        json=False,
    )


def test_unknown_commands_signals_and_headers_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(
        ConfigurationError, match="command 'bogus' not recognized; available control commands: add_consumer"
    ):
        run_control(None, _control("bogus"))
    with pytest.raises(ConfigurationError, match="a command is required"):
        run_control(None, _control())
    # None as the app: a refusal must come before the app is used
    with pytest.raises(ConfigurationError, match="unknown signal 'NOPE'"):
        run_control(None, _control("terminate", "NOPE", "some-id"))
    with pytest.raises(ConfigurationError, match="'a' is not key=value"):
        run_control(None, _control("revoke_by_stamped_headers", "a"))


def test_the_command_list_names_every_command_with_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    listing = command_listing()
    for name, command in COMMANDS.items():
        assert f"  {name} {command.signature}".rstrip() in listing
    assert main(["control", "--list"]) == 0  # no -A needed, as Celery
    assert capsys.readouterr().out.startswith("Control Commands:\n  add_consumer <queue> [exchange [type")
    assert main(["inspect", "--list"]) == 0
    assert capsys.readouterr().out == inspect_listing() + "\n"
    assert "  conf [include_defaults=False]   List configuration." in inspect_listing()


def test_replies_are_laid_out_as_celery_lays_them_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert pretty({"ok": "pong"}) == ("OK", "    pong")
    assert pretty({"error": "unknown task"}) == ("ERROR", "    unknown task")
    assert pretty([]) == ("OK", "- empty -")
    assert pretty(["a", {"id": 1}]) == ("OK", "* a\n* {'id': 1}")
    assert pretty({"b": 1, "a": [2]}) == ("OK", '{\n    "a": [\n        2\n    ],\n    "b": 1\n}')
    assert pretty(None) == ("OK", "None")
    say_reply("w1@host", {"error": "ValueError('Autoscale not enabled')"})
    assert capsys.readouterr().out == "->  w1@host: ERROR\n        ValueError('Autoscale not enabled')\n"
    assert print_replies({"w1": ["x"], "w2": []}, as_json=False) == 0
    assert capsys.readouterr().out == "->  w1: OK\n    * x\n->  w2: OK\n    - empty -\n\n2 nodes online.\n"
    assert print_command_replies([{"w1": None}], as_json=True) == 0
    assert capsys.readouterr().out == '[{"w1": null}]\n'
    assert print_command_replies([], as_json=True) == EX_UNAVAILABLE == 69
    assert capsys.readouterr().err == "Error: No nodes replied within time constraint\n"
    assert print_replies({}, as_json=False) == 69


def test_inspect_conf_takes_celery_s_include_defaults_word() -> None:
    from pgtasks.cli.compat_commands import _yes_or_no

    assert _yes_or_no("True") is True and _yes_or_no("1") is True and _yes_or_no("no") is False
    with pytest.raises(
        ConfigurationError, match="include_defaults is yes or no \\(true/false\\), not 'maybe'"
    ):
        _yes_or_no("maybe")

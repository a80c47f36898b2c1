"""Every subcommand and every option of ``pgtasks`` says what it does in ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from pgtasks.cli.celery_programs import REFUSED_PROGRAMS
from pgtasks.cli.main import _parser


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if path == "pgtasks" and name in REFUSED_PROGRAMS:
                    continue  # Celery's programs pgtasks does not offer: refused, never listed
                yield f"{path} {name}", argparse.Action([name], name, help=helps.get(name))
                yield from _walk(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_subcommand_and_option_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, action in _walk(_parser(), "pgtasks")
        if not action.help
    ]
    assert missing == []
    listed = _parser().format_help()
    commands = {line.split()[0] for line in listed.splitlines() if line.startswith("    ") and line[4] != " "}
    assert "report" in commands and not commands & set(REFUSED_PROGRAMS)

"""``repr()`` and ``str()`` of signatures and workflows as Celery prints them: the cases of
tests/compat/apps/canvas_reprs.py, pinned here as the real Celery 5.7 prints them, and printed
again by the real Celery (its own interpreter) to show the pins are its."""

from __future__ import annotations

import json
import subprocess

from tests.compat.apps import canvas_reprs
from tests.support.cli import REPO
from tests.support.redis import celery_python

EXPECTED = {
    "signature": "proj.add(2, 2)",
    "no arguments": "proj.add()",
    "kwargs": "proj.add(2, y=3)",
    "kwargs only": "proj.add(x=1, y=2)",
    "immutable": "proj.add(2, 2)",
    "immutable kwargs": "proj.add(x=1, y=2)",
    "set immutable": "proj.add(1, 1)",
    "options": "proj.add(2, 2)",
    "link": "proj.add(1, 1)",
    "nested values": "proj.add('a', [1, {'b': 2}])",
    "float and None": "proj.add(1.5, None)",
    "bytes and bool": "proj.add(b'x', True)",
    "unicode": "proj.add('é', y='ü')",
    "long string": "proj.add('" + "x" * 200 + "')",
    "signature()": "proj.add(1, y=2)",
    "unknown name": "other.task()",
    "clone": "proj.add(2, 1, z=3)",
    "reprcall": "proj.add(5, 1, y=2, z=3)",
    "reprcall immutable": "proj.add(5, 1, y=2)",
    "chain": "proj.add(2, 2) | mul(4)",
    "chain immutable": "proj.add(2, 2) | mul(4, 4)",
    "chain of three": "proj.add(2, 2) | mul(4) | add(1)",
    "chain of one": "proj.add(1, 1)",
    "empty chain": "<chain@0x...: empty>",
    "chain from a list": "proj.add(1, 1) | mul(2)",
    "chain kwargs": "proj.add(1, y=2) | mul(y=3)",
    "chain options": "proj.add(1, 1) | mul(2)",
    "chain clone": "proj.add(1, 1) | mul(2)",
    "nested chain": "proj.add(1, 1) | mul(2) | add(3)",
    "chain or chain": "proj.add(1, 1) | mul(2) | add(3) | mul(4)",
    "task or chain": "proj.add(1) | mul(2) | tsum()",
    "module once": "proj.add(1, y='x') | mul('y')",
    "no module": "plain(1.5) | plain(2.5)",
    "module in a word": "proj.add(1, y='webproj.x') | mul('my-proj.y', '(z')",
    "module twice": "proj.add('proj.a') | mul('proj.b')",
    "group": "group((proj.add(1, 1), add(2, 2)))",
    "group from a list": "group([proj.add(1, 1), add(2, 2)])",
    "group from a tuple": "group((proj.add(1, 1), add(2, 2)))",
    "group of one": "group([proj.add(1, 1)])",
    "group of one in a list": "group([proj.add(1, 1)])",
    "group of one in a tuple": "group((proj.add(1, 1),))",
    "empty group": "group(<empty>)",
    "group immutable": "group((proj.add(1, 1), mul(2, 2)))",
    "group from a generator": "group(<_regen: [proj.add(0, 0), add(1, 1)...]>)",
    "group options": "group([proj.add(1, 1)])",
    "group clone": "group((proj.add(1, 1), add(2, 2)))",
    "group in group": "group((group([proj.add(1, 1)]), proj.add(2, 2)))",
    "chain in group": "group((proj.add(1, 1) | mul(2), proj.add(3, 3)))",
    "chord": "%proj.tsum([add(1, 1), add(2, 2)])",
    "chord body kwargs": "%proj.tsum([add(1, 1)], y=1)",
    "chord immutable body": "%proj.tsum([add(1, 1)], [1])",
    "chord without body": "<chord without body: [proj.add(1, 1), proj.add(2, 2)]>",
    "chord options": "%proj.tsum([add(1, 1)])",
    "chord of a tuple group": "%proj.tsum((add(1, 1), add(2, 2)))",
    "chord of a list group": "%proj.tsum([add(1, 1), add(2, 2)])",
    "chord of a tuple": "%proj.tsum([add(1, 1), add(2, 2)])",
    "chord of one signature": "%proj.tsum([add(1, 1)])",
    "chord clone": "%proj.tsum([add(1, 1), add(2, 2)])",
    "group or task": "%proj.tsum((add(1, 1), add(2, 2)))",
    "chain header": "%proj.tsum([add(1, 1) | mul(2), add(3, 3)])",
    "chord or task": "%(proj.tsum([add(1, 1)]) | mul(2))",
    "chord body chain": "%(proj.tsum([add(1, 1)]) | mul(2) | add(1))",
    "group or chain": "%(proj.tsum((add(1, 1), add(1, 1))) | mul(2))",
    "chain to group": "proj.add(1, 1) | group((mul(2), mul(3)))",
    "chain to chord": "proj.add(1, 1) | %tsum([mul(2), mul(3)])",
    "chord in chain": "%(proj.tsum([add(1, 1)]) | mul(2))",
    "chord then two": "%(proj.tsum([add(1, 1)]) | mul(2) | add(3))",
    "task chord then two": "proj.add(1, 1) | %(tsum([add(1, 1)]) | mul(2) | add(3))",
    "group then task": "proj.add(1, 1) | %tsum((mul(2), mul(3)))",
    "group then two": "proj.add(1, 1) | %(tsum((mul(2), mul(3))) | mul(3))",
    "two groups": "proj.add(1, 1) | group((mul(2), mul(3))) | group((mul(2), mul(3)))",
    "groups of one": "proj.add(1, 1) | mul(2) | tsum()",
    "ends in a group of one": "proj.add(2, 2) | add(4) | mul(1)",
    "chunks": "celery.chunks(task=proj.add(), it=<_regen: [...]>, n=2)",
    "chunks of a list": "celery.chunks(task=proj.add(), it=[(1, 2), (3, 4)], n=1)",
    "chunks in group": "group([celery.chunks(task=proj.add(), it=[(1, 1)], n=1)])",
    "chunks header": "%proj.tsum([celery.chunks(task=add(), it=[(1, 1)], n=1)])",
    "chunks then task": "celery.chunks(task=proj.add(), it=[(1, 2)], n=1) | proj.tsum()",
    "map": "[proj.tsum(x) for x in [[1, 2], [3]]]",
    "map of a generator": "[proj.tsum(x) for x in <_regen: [...]>]",
    "map long": (
        "[proj.tsum(x) for x in [[], [0], [0, 1], [0, 1, 2], [0, 1, 2, "
        "3], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5,...]"
    ),
    "map longer": (
        "[proj.tsum(x) for x in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "
        "12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,...]"
    ),
    "starmap": "[proj.add(*x) for x in [(1, 2), (3, 4)]]",
    "starmap of zip": "[proj.add(*x) for x in <_regen: [...]>]",
    "xmap": "[proj.tsum(x) for x in [[1]]]",
    "xstarmap": "[proj.add(*x) for x in [(1, 2)]]",
    "map in chain": "proj.add(1, 1) | [tsum(x) for x in [[1]]]",
    "group from JSON": "group([proj.add(1, 1), add(2, 2)])",
    "chain from JSON": "proj.add(1, 1) | mul(2)",
    "chord from JSON": "%proj.tsum([add(1, 1), add(2, 2)])",
    "signature from JSON": "proj.add(1, y=2)",
}


def test_signatures_and_workflows_print_as_celery_prints_them() -> None:
    printed = canvas_reprs.printed()
    assert {name: texts[0] for name, texts in printed.items()} == EXPECTED
    assert all(text == texts[0] for texts in printed.values() for text in texts)  # str() is repr()


def test_the_pins_are_what_the_real_celery_prints() -> None:
    done = subprocess.run(
        [str(celery_python()), "-m", "tests.compat.apps.canvas_reprs"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    printed = json.loads(done.stdout)
    assert {name: texts[0] for name, texts in printed.items()} == EXPECTED

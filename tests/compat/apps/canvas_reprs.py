"""Canvas shapes whose printed forms are compared with the real Celery's
(tests/compat/test_canvas_reprs.py): this module runs under either, ``python -m`` printing
each case's ``repr()`` and ``str()`` as JSON."""

import json
import re

from celery import Celery, chain, chord, chunks, group, signature, xmap, xstarmap

app = Celery("proj", set_as_current=False)


@app.task(name="proj.add")
def add(x, y):
    return x + y


@app.task(name="proj.mul")
def mul(x, y):
    return x * y


@app.task(name="proj.tsum")
def tsum(xs):
    return sum(xs)


@app.task(name="plain")
def plain(x):
    return x


CASES = {
    "signature": lambda: add.s(2, 2),
    "no arguments": lambda: add.s(),
    "kwargs": lambda: add.s(2, y=3),
    "kwargs only": lambda: add.s(x=1, y=2),
    "immutable": lambda: add.si(2, 2),
    "immutable kwargs": lambda: add.si(x=1, y=2),
    "set immutable": lambda: add.s(1, 1).set(immutable=True),
    "options": lambda: add.s(2, 2).set(countdown=10, queue="q"),
    "link": lambda: add.s(1, 1).set(link=mul.s(2)),
    "nested values": lambda: add.s("a", [1, {"b": 2}]),
    "float and None": lambda: add.s(1.5, None),
    "bytes and bool": lambda: add.s(b"x", True),
    "unicode": lambda: add.s("é", y="ü"),
    "long string": lambda: add.s("x" * 200),
    "signature()": lambda: signature("proj.add", args=(1,), kwargs={"y": 2}),
    "unknown name": lambda: signature("other.task"),
    "clone": lambda: add.s(1).clone(args=(2,), kwargs={"z": 3}),
    "reprcall": lambda: add.s(1, y=2).reprcall(5, z=3),
    "reprcall immutable": lambda: add.si(1, y=2).reprcall(5),
    "chain": lambda: add.s(2, 2) | mul.s(4),
    "chain immutable": lambda: add.si(2, 2) | mul.si(4, 4),
    "chain of three": lambda: chain(add.s(2, 2), mul.s(4), add.s(1)),
    "chain of one": lambda: chain(add.s(1, 1)),
    "empty chain": lambda: chain(),
    "chain from a list": lambda: chain([add.s(1, 1), mul.s(2)]),
    "chain kwargs": lambda: chain(add.s(1, y=2), mul.s(y=3)),
    "chain options": lambda: chain(add.s(1, 1), mul.s(2)).set(queue="x"),
    "chain clone": lambda: chain(add.s(1, 1), mul.s(2)).clone(),
    "nested chain": lambda: chain(chain(add.s(1, 1), mul.s(2)), add.s(3)),
    "chain or chain": lambda: chain(add.s(1, 1), mul.s(2)) | chain(add.s(3), mul.s(4)),
    "task or chain": lambda: add.s(1) | (mul.s(2) | tsum.s()),
    "module once": lambda: add.s(1, y="proj.x") | mul.s("proj.y"),
    "no module": lambda: plain.s(1.5) | plain.s(2.5),
    "module in a word": lambda: add.s(1, y="webproj.x") | mul.s("my-proj.y", "(proj.z"),
    "module twice": lambda: add.s("proj.proj.a") | mul.s("proj.proj.b"),
    "group": lambda: group(add.s(1, 1), add.s(2, 2)),
    "group from a list": lambda: group([add.s(1, 1), add.s(2, 2)]),
    "group from a tuple": lambda: group((add.s(1, 1), add.s(2, 2))),
    "group of one": lambda: group(add.s(1, 1)),
    "group of one in a list": lambda: group([add.s(1, 1)]),
    "group of one in a tuple": lambda: group((add.s(1, 1),)),
    "empty group": lambda: group([]),
    "group immutable": lambda: group(add.si(1, 1), mul.si(2, 2)),
    "group from a generator": lambda: group(add.s(i, i) for i in range(2)),
    "group options": lambda: group(add.s(1, 1)).set(queue="x"),
    "group clone": lambda: group(add.s(1, 1), add.s(2, 2)).clone(),
    "group in group": lambda: group(group(add.s(1, 1)), add.s(2, 2)),
    "chain in group": lambda: group(add.s(1, 1) | mul.s(2), add.s(3, 3)),
    "chord": lambda: chord([add.s(1, 1), add.s(2, 2)], tsum.s()),
    "chord body kwargs": lambda: chord([add.s(1, 1)], tsum.s(y=1)),
    "chord immutable body": lambda: chord([add.s(1, 1)], tsum.si([1])),
    "chord without body": lambda: chord([add.s(1, 1), add.s(2, 2)]),
    "chord options": lambda: chord([add.s(1, 1)], tsum.s(), countdown=3),
    "chord of a tuple group": lambda: chord(group(add.s(1, 1), add.s(2, 2)), tsum.s()),
    "chord of a list group": lambda: chord(group([add.s(1, 1), add.s(2, 2)]), tsum.s()),
    "chord of a tuple": lambda: chord((add.s(1, 1), add.s(2, 2)), tsum.s()),
    "chord of one signature": lambda: chord(add.s(1, 1), tsum.s()),
    "chord clone": lambda: chord((add.s(1, 1), add.s(2, 2)), tsum.s()).clone(),
    "group or task": lambda: group(add.s(1, 1), add.s(2, 2)) | tsum.s(),
    "chain header": lambda: chord([add.s(1, 1) | mul.s(2), add.s(3, 3)], tsum.s()),
    "chord or task": lambda: chord([add.s(1, 1)], tsum.s()) | mul.s(2),
    "chord body chain": lambda: chord([add.s(1, 1)], chain(tsum.s(), mul.s(2), add.s(1))),
    "group or chain": lambda: group(add.s(1, 1), add.s(1, 1)) | (tsum.s() | mul.s(2)),
    "chain to group": lambda: chain(add.s(1, 1), group(mul.s(2), mul.s(3))),
    "chain to chord": lambda: add.s(1, 1) | chord([mul.s(2), mul.s(3)], tsum.s()),
    "chord in chain": lambda: chain(chord([add.s(1, 1)], tsum.s()), mul.s(2)),
    "chord then two": lambda: chain(chord([add.s(1, 1)], tsum.s()), mul.s(2), add.s(3)),
    "task chord then two": lambda: chain(add.s(1, 1), chord([add.s(1, 1)], tsum.s()), mul.s(2), add.s(3)),
    "group then task": lambda: add.s(1, 1) | group(mul.s(2), mul.s(3)) | tsum.s(),
    "group then two": lambda: chain(add.s(1, 1), group(mul.s(2), mul.s(3)), tsum.s(), mul.s(3)),
    "two groups": lambda: chain(add.s(1, 1), group(mul.s(2), mul.s(3)), group(mul.s(2), mul.s(3))),
    "groups of one": lambda: chain(group(add.s(1, 1)), group(mul.s(2)), tsum.s()),
    "ends in a group of one": lambda: add.s(2, 2) | add.s(4) | group(mul.s(1)),
    "chunks": lambda: add.chunks(zip(range(4), range(4), strict=True), 2),
    "chunks of a list": lambda: chunks(add.s(), [(1, 2), (3, 4)], 1),
    "chunks in group": lambda: group(add.chunks([(1, 1)], 1)),
    "chunks header": lambda: chord(add.chunks([(1, 1)], 1), tsum.s()),
    "chunks then task": lambda: add.chunks([(1, 2)], 1) | tsum.s(),
    "map": lambda: tsum.map([[1, 2], [3]]),
    "map of a generator": lambda: tsum.map(x for x in range(3)),
    "map long": lambda: tsum.map([list(range(i)) for i in range(12)]),
    "map longer": lambda: tsum.map(list(range(40))),
    "starmap": lambda: add.starmap([(1, 2), (3, 4)]),
    "starmap of zip": lambda: add.starmap(zip([1], [2], strict=True)),
    "xmap": lambda: xmap(tsum.s(), [[1]]),
    "xstarmap": lambda: xstarmap(add.s(), [(1, 2)]),
    "map in chain": lambda: add.s(1, 1) | tsum.map([[1]]),
    "group from JSON": lambda: from_json(group(add.s(1, 1), add.s(2, 2))),
    "chain from JSON": lambda: from_json(add.s(1, 1) | mul.s(2)),
    "chord from JSON": lambda: from_json(chord((add.s(1, 1), add.s(2, 2)), tsum.s())),
    "signature from JSON": lambda: from_json(add.si(1, y=2)),
}


def from_json(sig):
    """``sig`` as a worker rebuilds it from a message."""
    return signature(json.loads(json.dumps(sig)), app=app)


def printed() -> dict[str, list[str]]:
    """Each case's repr() and str() (a reprcall() its text), a memory address as 0x..."""
    out = {}
    for name, make in CASES.items():
        made = make()
        texts = [made, made] if isinstance(made, str) else [repr(made), str(made)]  # reprcall()
        out[name] = [re.sub(r"0x[0-9a-f]+", "0x...", text) for text in texts]
    return out


if __name__ == "__main__":
    print(json.dumps(printed()))

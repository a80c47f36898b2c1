"""How Celery prints its canvas (``repr()`` and ``str()`` alike), which logs, debuggers and
tests show: ``proj.add(2, 2)``, ``proj.add(2, 2) | mul(4)``, ``group((proj.add(1, 1), add(2,
2)))``, ``%proj.tsum([add(1, 1), add(2, 2)])``, ``[proj.tsum(x) for x in [[1], [2]]]``.

Celery's rules, as its printed forms show them: a signature is a call; after the first task's
name, a repeated module prefix is left out of the rest of the text; a group prints its tasks as
they were given (a tuple for ``group(a, b)``, a list for ``group([a, b])``, ``<_regen: ...>``
for a generator); a chord prints as its body called with the header; a chain prints as Celery
builds it (a group followed by a task is a chord, tasks after a chord join its body, a group
of one is its task). The workflow classes call :func:`canvas_repr` for their ``__repr__``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["call_repr", "canvas_repr", "given_items", "given_shape", "map_repr", "without_repeated_module"]

GENERATOR = "generator"  # the shape of tasks or items given as an iterator (Celery's regen)


class _Shown(str):
    """Text that prints as itself (``<_regen: [...]>`` inside a call)."""

    def __repr__(self) -> str:
        return str(self)


def given_shape(given: Any) -> str:
    """How a group's tasks (or a map's items) were given: ``tuple``, ``list`` or ``generator``."""
    if isinstance(given, tuple):
        return "tuple"
    if isinstance(given, list):
        return "list"
    return GENERATOR


def shown_as(items: list[Any], shape: str | None, done: bool = False) -> Any:
    """``items`` as Celery prints what was given: a tuple, a list, or a consumed generator
    (``<_regen: [a, b...]>``; ``<_regen: [...]>`` when nothing was read from it)."""
    if shape == "tuple":
        return tuple(items)
    if shape == GENERATOR:
        shown = ", ".join(repr(item) for item in items)
        return _Shown(f"<_regen: [{shown}{'' if done else '...'}]>")
    return list(items)


def without_repeated_module(task_name: str, text: str) -> str:
    """``text`` with the module of ``task_name`` (``proj.`` of ``proj.add``) kept where it
    first appears and, after it, left out where it starts a name (not in ``webproj.``), as
    Celery prints a workflow's members. A name without a module changes nothing."""
    module = str(task_name).rpartition(".")[0]
    if not module:
        return text
    prefix = module + "."
    first = text.find(prefix)
    if first < 0:
        return text
    head, rest = text[: first + len(prefix)], text[first + len(prefix) :]
    pieces = rest.split(prefix)
    out, position = [pieces[0]], len(pieces[0])
    for piece in pieces[1:]:
        before = rest[position - 1] if position else ""
        in_a_word = bool(before) and (before.isalnum() or before in "_.-")
        out.append(prefix + piece if in_a_word else piece)
        position += len(prefix) + len(piece)
    return head + "".join(out)


def call_repr(name: str, args: Any = (), kwargs: Any = None) -> str:
    """``name(1, 2, y=3)``."""
    shown = [repr(a) for a in args or ()] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()]
    return f"{name}({', '.join(shown)})"


def canvas_repr(sig: Any) -> str:
    """Celery's printed form of a signature or workflow (see the module docstring)."""
    kind = sig.get("task")
    if kind == "celery.chain":
        return _chain_repr(sig, _members_as_celery_builds_them(sig._signatures()))
    if kind == "celery.group":
        return _group_repr(sig)
    if kind == "celery.chord":
        return _chord_repr(sig)
    return call_repr(str(kind), sig.get("args") or (), sig.get("kwargs") or {})


def map_repr(task_name: str, items: Any, star: bool) -> str:
    """``xmap`` / ``xstarmap``: ``[proj.add(*x) for x in [(1, 2), (3, 4)]]`` (the items'
    text cut at 100 characters, on a space, then ``...``)."""
    text = repr(items)
    if len(text) >= 100:
        text = text[:100].rsplit(" ", 1)[0] + "..."
    return f"[{task_name}({'*' if star else ''}x) for x in {text}]"


def given_items(given: Any) -> Any:
    """A map's or chunks' items as Celery prints them: a list or tuple as given, anything
    else as a generator nothing was read from."""
    return given if isinstance(given, (list, tuple)) else _Shown("<_regen: [...]>")


def _group_repr(sig: Any) -> str:
    members = sig._signatures()
    if not members:
        return "group(<empty>)"
    shown = shown_as(members, sig._shape)
    return without_repeated_module(_name_of(members[0]), f"group({shown!r})")


def _chord_repr(sig: Any) -> str:
    lazy = sig._lazy is not None
    header = _Shown("<_regen: [...]>") if lazy else shown_as(sig.header._signatures(), sig.header._shape)
    body = sig._body_signature()
    if body is None:
        return f"<chord without body: {header!r}>"
    return _body_called_with(body, header)


def _body_called_with(body: Any, header: Any) -> str:
    """A chord: ``%`` and its body called with its header (a chain body: its first task)."""
    if body.get("task") == "celery.chain" and body.tasks:
        first, rest = body.tasks[0], body.tasks[1:]
        called = _reprcall(first, header)
        text = (
            f"%({called} | {_chain_repr(None, _members_as_celery_builds_them(rest))})"
            if rest
            else f"%({called})"
        )
        return without_repeated_module(_name_of(first), text)
    return "%" + without_repeated_module(_name_of(body), _reprcall(body, header))


def _reprcall(sig: Any, first: Any) -> str:
    return call_repr(_name_of(sig), (first, *(sig.get("args") or ())), sig.get("kwargs") or {})


def _chain_repr(sig: Any, members: list[Any]) -> str:
    if not members:
        return f"<chain@{id(sig):#x}: empty>"
    return without_repeated_module(_name_of(members[0]), " | ".join(_shown(m) for m in members))


def _shown(member: Any) -> str:
    return repr(member) if not isinstance(member, _Chord) else _body_called_with(member.body, member.header)


class _Chord:
    """A chord Celery makes of a chain's members while building it: a header's tasks (as
    given) and a body (a signature, or a chain of signatures as a list)."""

    def __init__(self, header: Any, body: Any) -> None:
        self.header, self.body = header, body


class _BodyChain(dict):  # type: ignore[type-arg]
    """A chord's body grown by the tasks after it in a chain."""

    def __init__(self, tasks: list[Any]) -> None:
        super().__init__(task="celery.chain")
        self.tasks = tasks


def _members_as_celery_builds_them(members: list[Any]) -> list[Any]:
    """A chain's members as Celery's chain holds them: a group of one is its task, a group
    followed by a task is a chord, and the tasks after a chord join its body."""
    built: list[Any] = []
    for member in members:
        kind = member.get("task")
        if kind == "celery.group" and len(member.tasks) == 1:
            [member] = member._signatures()
            kind = member.get("task")
        last = built[-1] if built else None
        if isinstance(last, _Chord):
            tasks = last.body.tasks if isinstance(last.body, _BodyChain) else [last.body]
            last.body = _BodyChain([*tasks, member])
            continue
        if last is not None and last.get("task") == "celery.group" and kind != "celery.group":
            built[-1] = _Chord(shown_as(last.tasks, last._shape), member)
            continue
        if kind == "celery.chord" and member.body is not None and member._lazy is None:
            header = shown_as(member.header._signatures(), member.header._shape)
            body = member._body_signature()
            chained = body.get("task") == "celery.chain"
            built.append(_Chord(header, _BodyChain(body._signatures()) if chained else body))
            continue
        built.append(member)
    return built


def _name_of(member: Any) -> str:
    return str(member.get("task")) if isinstance(member, dict) else "celery.chord"

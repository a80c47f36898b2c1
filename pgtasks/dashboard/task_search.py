"""The ``search`` of Flower's ``/api/tasks``, as its documentation and its answers describe it:
space-separated terms that must all match; ``OR``, ``AND`` and parentheses (five levels at
most) to combine them; ``"quoted phrases"`` (``\\"`` inside); ``field:value`` with a field
among ``name state worker args kwargs result`` (``state:`` matches exactly, ``kwargs:key=value``
one keyword argument exactly, the others a substring); a bare term is a substring of the
task's id, name, state, worker, args, kwargs or result. Matching ignores case. A query it
cannot read raises :class:`SearchError` with Flower's message (``... at position N.``)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_CHARACTERS = 2048
MAX_TOKENS = 128
MAX_DEPTH = 5
MIN_SUBSTRING = 3
FIELDS = ("name", "state", "worker", "args", "kwargs", "result")
BARE_FIELDS = ("uuid", "name", "state", "worker", "args", "kwargs", "result")

Task = dict[str, Any]  # a Flower task object
Predicate = Callable[[Task], bool]


class SearchError(ValueError):
    """A query that cannot be read; ``str()`` is Flower's message."""

    def __init__(self, what: str, position: int | None = None) -> None:
        super().__init__(what + ("" if position is None else f" at position {position}") + ".")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "word", "phrase", "(", ")", "OR", "AND"
    text: str
    position: int
    field: str | None = None  # a word or phrase qualified by field:


def parse(query: str) -> Predicate | None:
    """The predicate of ``query`` over Flower task objects; None for an empty query."""
    if len(query) > MAX_CHARACTERS:
        raise SearchError(f"Query exceeds {MAX_CHARACTERS} characters")
    tokens = _tokens(query)
    if not tokens:
        return None
    if len(tokens) > MAX_TOKENS:
        raise SearchError(f"Query exceeds {MAX_TOKENS} tokens")
    parser = _Parser(tokens)
    predicate = parser.alternatives(0)
    if parser.index < len(tokens):
        extra = tokens[parser.index]
        raise SearchError(f"Unexpected {extra.text!r}", extra.position)
    return predicate


def _tokens(query: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        if c.isspace():
            i += 1
        elif c in "()":
            tokens.append(Token(c, c, i))
            i += 1
        elif c == '"':
            start = i
            text, i = _phrase(query, i)
            tokens.append(Token("phrase", text, start))
        else:
            start = i
            while i < n and not query[i].isspace() and query[i] not in '()"':
                i += 1
            word = query[start:i]
            field, colon, value = word.partition(":")
            if colon and field.lower() in FIELDS:
                if i < n and query[i] == '"':  # field:"a phrase"
                    value, i = _phrase(query, i)
                    tokens.append(Token("phrase", value, start, field.lower()))
                    continue
                if not value:
                    raise SearchError("Search qualifier requires a value", start)
                tokens.append(Token("word", value, start, field.lower()))
            elif word in ("OR", "AND"):
                tokens.append(Token(word, word, start))
            elif word == "NOT":
                raise SearchError("NOT is not supported", start)
            elif word.startswith("-"):
                raise SearchError("Negation with '-' is not supported", start)
            else:
                tokens.append(Token("word", word, start))
    return tokens


def _phrase(query: str, start: int) -> tuple[str, int]:
    """The text of the quoted phrase at ``start`` and the index after it."""
    out: list[str] = []
    i = start + 1
    while i < len(query):
        c = query[i]
        if c == "\\" and i + 1 < len(query) and query[i + 1] == '"':
            out.append('"')
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    raise SearchError("Unterminated quoted phrase", start)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def _peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def alternatives(self, depth: int) -> Predicate:
        parts = [self.conjunction(depth)]
        while (token := self._peek()) is not None and token.kind == "OR":
            self.index += 1
            following = self._peek()
            if following is None or following.kind in (")", "OR", "AND"):
                raise SearchError("OR must be followed by a search term", token.position)
            parts.append(self.conjunction(depth))
        return parts[0] if len(parts) == 1 else (lambda task: any(p(task) for p in parts))

    def conjunction(self, depth: int) -> Predicate:
        parts = [self.unit(depth)]
        while (token := self._peek()) is not None and token.kind not in (")", "OR"):
            if token.kind == "AND":
                self.index += 1
                following = self._peek()
                if following is None or following.kind in (")", "OR", "AND"):
                    raise SearchError("AND must be followed by a search term", token.position)
            parts.append(self.unit(depth))
        return parts[0] if len(parts) == 1 else (lambda task: all(p(task) for p in parts))

    def unit(self, depth: int) -> Predicate:
        token = self._peek()
        if token is None:
            raise SearchError("Empty search term")
        if token.kind == "(":
            if depth + 1 > MAX_DEPTH:
                raise SearchError(f"Query nesting exceeds {MAX_DEPTH} levels", token.position)
            self.index += 1
            following = self._peek()
            if following is not None and following.kind == ")":
                raise SearchError("Empty group", token.position)
            inner = self.alternatives(depth + 1)
            closing = self._peek()
            if closing is None or closing.kind != ")":
                raise SearchError("Missing closing parenthesis", token.position)
            self.index += 1
            return inner
        if token.kind in ("word", "phrase"):
            self.index += 1
            return _term(token)
        raise SearchError(f"Unexpected {token.text!r}", token.position)


def _term(token: Token) -> Predicate:
    value = token.text
    if not value:
        raise SearchError("Empty search term", token.position)
    folded = value.casefold()
    if token.field == "state":
        return lambda task: str(task.get("state") or "").casefold() == folded
    if token.field == "kwargs" and "=" in value:
        key, _, wanted = value.partition("=")
        return lambda task: _kwarg_is(task.get("kwargs"), key, wanted)
    if len(value) < MIN_SUBSTRING:
        raise SearchError(
            f"Substring search terms must contain at least {MIN_SUBSTRING} characters", token.position
        )
    fields = (token.field,) if token.field else BARE_FIELDS
    return lambda task: any(folded in str(task.get(f) or "").casefold() for f in fields)


def _kwarg_is(kwargs_repr: Any, key: str, wanted: str) -> bool:
    """Whether the keyword argument ``key`` (in a kwargs repr) has the value ``wanted``."""
    try:
        kwargs = ast.literal_eval(kwargs_repr) if isinstance(kwargs_repr, str) else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    if not isinstance(kwargs, dict) or key not in kwargs:
        return False
    value = kwargs[key]
    folded = wanted.casefold()
    return str(value).casefold() == folded or repr(value).casefold() == folded

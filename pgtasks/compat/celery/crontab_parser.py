"""Celery's ``crontab_parser`` and ``ParseException`` (served as ``celery.schedules``' names):
one crontab field read into the set of numbers it matches, as validators of cron text use it
(``crontab_parser(60).parse('*/15')`` -> ``{0, 15, 30, 45}``). The schedules themselves are
evaluated by pgtasks' planner, not by this parser."""

from __future__ import annotations

__all__ = ["ParseException", "crontab_parser"]

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_DAY_NAMES = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
# a month or weekday by its name or its first three letters
_NAMES = {
    **{key: n for n, name in enumerate(_MONTH_NAMES, start=1) for key in (name, name[:3])},
    **{key: n for n, name in enumerate(_DAY_NAMES) for key in (name, name[:3])},
}


class ParseException(Exception):
    """A crontab field that cannot be read: an empty part (``'1,,2'``), a negative number."""


class crontab_parser:
    """Reads one crontab field: ``max_`` values counted from ``min_`` (minutes
    ``crontab_parser(60)``, hours ``(24)``, weekdays ``(7)`` with Sunday 0, days of the month
    ``(31, 1)``, months ``(12, 1)``). A part is ``*``, a number or name (``mon``, ``jan``), a
    range ``a-b`` (wrapping past the end: ``22-2``), each optionally ``/step``; parts are joined
    by commas. Numbers out of range and unknown names raise ValueError; empty parts and
    negative numbers :class:`ParseException`."""

    def __init__(self, max_: int = 60, min_: int = 0) -> None:
        self.max_ = max_
        self.min_ = min_

    @property
    def _last(self) -> int:
        return self.max_ + self.min_ - 1

    def parse(self, spec: str) -> set[int]:
        """The numbers ``spec`` matches."""
        matched: set[int] = set()
        for part in str(spec).split(","):
            if not part:
                raise ParseException("empty part")
            matched.update(self._part(part))
        return matched

    def _part(self, part: str) -> list[int]:
        span, slash, step_text = part.partition("/")
        step = 1
        if slash:
            step = self._number(step_text)
            if step == 0:
                raise ValueError(f"step cannot be zero in {part!r}")
        if span == "*":
            values = list(range(self.min_, self._last + 1))
        elif "-" in span.lstrip("-"):
            first_text, _, last_text = span.rpartition("-") if span.startswith("-") else span.partition("-")
            first, last = self._value(first_text), self._value(last_text)
            if first <= last:
                values = list(range(first, last + 1))
            else:  # wraps past the end: 22-2 is 22, 23, 0, 1, 2
                values = list(range(first, self._last + 1)) + list(range(self.min_, last + 1))
        elif slash:
            raise ValueError(f"a step needs '*' or a range before it, not {span!r} in {part!r}")
        else:
            values = [self._value(span)]
        return values[::step]

    def _number(self, text: str) -> int:
        if text.startswith("-"):
            raise ParseException("negative numbers not supported")
        if not text.isdigit():
            raise ValueError(f"Invalid number {text!r}.")
        return int(text)

    def _value(self, text: str) -> int:
        if text.startswith("-"):
            raise ParseException("negative numbers not supported")
        if text.isdigit():
            value = int(text)
        else:
            found = _NAMES.get(text.lower())
            if found is None:
                raise ValueError(f"Invalid weekday or month literal {text!r}.")
            value = found
        if value > self._last:
            raise ValueError(f"Invalid end range: {value} > {self._last}.")
        if value < self.min_:
            raise ValueError(f"Invalid beginning range: {value} < {self.min_}.")
        return value

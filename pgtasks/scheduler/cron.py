"""Cron expressions: parsing and validation, with errors that name the bad field.

Five fields (``minute hour day-of-month month day-of-week``) or six with a leading seconds
field (``second minute hour day-of-month month day-of-week``, the Quartz/DBOS order), plus
the aliases ``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``
and ``@hourly``. Field syntax is croniter's: lists, ranges, steps, month and day names
(``mon-fri``), ``L`` and ``#``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from croniter import croniter

from pgtasks.engine.errors import ConfigurationError

FIVE_FIELDS = ("minute", "hour", "day_of_month", "month", "day_of_week")
SIX_FIELDS = ("second", *FIVE_FIELDS)
_WILDCARDS = {
    "second": "*",
    "minute": "*",
    "hour": "*",
    "day_of_month": "*",
    "month": "*",
    "day_of_week": "*",
}
_RANGES = {
    "second": "0-59",
    "minute": "0-59",
    "hour": "0-23",
    "day_of_month": "1-31 or L",
    "month": "1-12 or jan-dec",
    "day_of_week": "0-7 or sun-sat (0 and 7 are Sunday)",
}
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A validated cron expression. ``text`` is what the user wrote (aliases expanded)."""

    text: str
    has_seconds: bool
    day_and: bool = False  # both day fields must match (Celery's crontab), not either (cron's)
    every_hour: bool = False  # the hour field matches all 24 hours (``*``, ``0-23``, ``*/1``, ...)

    @property
    def fields(self) -> dict[str, str]:
        """The fields by name (``second`` only in the six-field form)."""
        names = SIX_FIELDS if self.has_seconds else FIVE_FIELDS
        return dict(zip(names, self.text.split(), strict=True))

    @property
    def hour_is_wildcard(self) -> bool:
        """True when the hour field matches every hour (``*``, ``0-23``, ``*/1``, a list of all
        24): the schedule follows elapsed time through a repeated (fall-back) hour instead of
        firing each local time once."""
        return self.every_hour

    def iterator(self, start_local_naive: datetime.datetime) -> croniter:
        """A croniter over local wall-clock times strictly after ``start_local_naive``."""
        return croniter(
            self.text, start_local_naive, second_at_beginning=self.has_seconds, day_or=not self.day_and
        )


def parse_cron(text: str, day_and: bool = False) -> CronExpression:
    """Validate ``text``; raise ConfigurationError naming the bad field."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError(f"cron expression must be a non-empty string, not {text!r}")
    normalized = " ".join(text.split())
    if normalized.startswith("@"):
        if normalized.lower() not in ALIASES:
            raise ConfigurationError(
                f"cron expression {text!r}: unknown alias; use one of {', '.join(sorted(ALIASES))}"
            )
        normalized = ALIASES[normalized.lower()]
    parts = normalized.split(" ")
    if len(parts) not in (5, 6):
        raise ConfigurationError(
            f"cron expression {text!r} has {len(parts)} fields; expected 5 "
            "(minute hour day_of_month month day_of_week) or 6 with seconds first "
            "(second minute hour day_of_month month day_of_week)"
        )
    names = SIX_FIELDS if len(parts) == 6 else FIVE_FIELDS
    for name, value in zip(names, parts, strict=True):
        _check_field(text, names, name, value)
    if not croniter.is_valid(normalized, second_at_beginning=len(parts) == 6):
        raise ConfigurationError(f"cron expression {text!r} is not valid")
    expanded, _ = croniter.expand(normalized, second_at_beginning=len(parts) == 6)
    # croniter's expansion writes a field that covers its whole range as "*"; the hour is the
    # second entry in both layouts (a leading seconds field is moved to the end).
    every_hour = expanded[1] == ["*"]
    return CronExpression(normalized, has_seconds=len(parts) == 6, day_and=day_and, every_hour=every_hour)


def _check_field(text: str, names: tuple[str, ...], name: str, value: str) -> None:
    """Check one field alone, the others being wildcards, so the error can name it."""
    if value.upper().startswith("H") or "H(" in value.upper():
        raise ConfigurationError(
            f"cron expression {text!r}: field {name} ({value!r}) uses a hashed value (H), "
            "which pgtasks does not support"
        )
    probe = " ".join(value if n == name else _WILDCARDS[n] for n in names)
    if not croniter.is_valid(probe, second_at_beginning=len(names) == 6):
        raise ConfigurationError(
            f"cron expression {text!r}: field {name} ({value!r}) is invalid; allowed: {_RANGES[name]}, "
            "with lists (a,b), ranges (a-b) and steps (*/n)"
        )

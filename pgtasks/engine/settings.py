"""Settings of an application or client, with their defaults and checks."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from pgtasks.engine.errors import ConfigurationError
from pgtasks.sysdb.identifiers import validate_identifier
from pgtasks.sysdb.queues import MAX_SECONDS as MAX_SECONDS  # the longest age a setting may give
from pgtasks.sysdb.urls import DEFAULT_SCHEMA, parse_database_url, resolve_database_url

VERSION_ENV = "PGTASKS_APPLICATION_VERSION"
DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # serialized arguments of one task


DEFAULT_RESULT_EXPIRES = 86400.0  # seconds: one day, as Celery's result_expires


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything an App or Client is configured with. Frozen: build a new one to change it."""

    database_url: str = field(default_factory=lambda: resolve_database_url(None))
    schema: str = DEFAULT_SCHEMA
    default_queue: str = "default"
    serializer: str = "json"
    accept_content: tuple[str, ...] = ("json",)
    application_version: str | None = field(default_factory=lambda: os.environ.get(VERSION_ENV) or None)
    max_recovery_attempts: int = 100
    lease_seconds: float = 30.0
    poll_interval: float = 1.0
    pool_size: int = 10
    log_task_args: bool = False
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    # Retention: finished tasks are deleted this long after they finished (Celery's
    # result_expires, one day by default); None keeps them forever.
    result_expires: float | None = DEFAULT_RESULT_EXPIRES

    def __post_init__(self) -> None:
        # The schema is checked whatever the dialect, so a bad name never waits for the day
        # the application moves from SQLite to PostgreSQL.
        validate_identifier(self.schema, "schema name")
        parse_database_url(self.database_url, self.schema)  # fails at once on a bad URL
        validate_queue_name(self.default_queue)
        version = self.application_version
        if version is not None:
            if not isinstance(version, str):
                raise ConfigurationError(f"application_version must be a string, not {version!r}")
            check_name_length(version, "application_version")
        attempts = self.max_recovery_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts < 2**31:
            raise ConfigurationError(
                f"max_recovery_attempts must be an integer from 0 to {2**31 - 1}, not {attempts!r}"
            )
        if self.log_task_args not in (True, False):  # 0 and 1 too (an environment variable read as int)
            raise ConfigurationError(f"log_task_args must be True or False, not {self.log_task_args!r}")
        for name in ("lease_seconds", "poll_interval"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigurationError(f"{name} must be a positive number of seconds, not {value!r}")
        size = self.pool_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigurationError(f"pool_size must be a whole number >= 1, not {size!r}")
        expires = self.result_expires
        if expires is not None and (
            isinstance(expires, bool)
            or not isinstance(expires, (int, float))
            or not 0 < expires <= MAX_SECONDS
        ):
            raise ConfigurationError(
                "result_expires must be a positive number of seconds, at most a century, or None to "
                f"keep them, not {expires!r}"
            )
        cap = self.max_payload_bytes
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigurationError(f"max_payload_bytes must be a positive number of bytes, not {cap!r}")


# Identifier-like inputs are capped well below PostgreSQL's btree row limit (~2,700 bytes: a
# longer key fails the insert), the same on SQLite, and checked before any SQL.
MAX_NAME_CHARS = 255  # task name, worker name (executor id), application version
MAX_KEY_BYTES = 1000  # deduplication_id, partition_key: UTF-8 bytes (with the queue name in one index)


def check_name_length(value: str, what: str, limit: int = MAX_NAME_CHARS) -> None:
    """Refuse a name longer than ``limit`` characters, naming the field and the limit."""
    if len(value) > limit:
        raise ConfigurationError(
            f"{what} {value[:40]!r}... is {len(value)} characters long; the limit is {limit} characters"
        )


def check_key_length(value: str, what: str, limit: int = MAX_KEY_BYTES) -> None:
    """Refuse a key longer than ``limit`` bytes in UTF-8, naming the field and the limit."""
    size = len(value) if len(value) * 4 <= limit else len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ConfigurationError(
            f"{what} {value[:40]!r}... is {size} bytes long (UTF-8); the limit is {limit} bytes"
        )


_QUEUE_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:@")


def validate_queue_name(name: str) -> str:
    """Queue names become NOTIFY payloads and labels; keep them to a safe alphabet."""
    if not isinstance(name, str) or not name or len(name) > 200:
        raise ConfigurationError(f"invalid queue name {name!r}: 1 to 200 characters")
    if not _QUEUE_NAME_CHARACTERS.issuperset(name):
        raise ConfigurationError(f"invalid queue name {name!r}: use letters, digits and _ - . : @")
    return name

"""parse_database_url, redact_url and resolve_database_url (no database needed)."""

from __future__ import annotations

import pytest

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.urls import (
    DATABASE_URL_ENV,
    DEFAULT_DATABASE_URL,
    DEFAULT_SCHEMA,
    parse_database_url,
    redact_url,
    resolve_database_url,
)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user:pw@db.example:5432/app",
        "postgres://user:pw@db.example:5432/app",
        "postgresql+psycopg://user:pw@db.example:5432/app",
        "postgresql+psycopg2://user:pw@db.example:5432/app",
        "POSTGRESQL://user:pw@db.example:5432/app",
    ],
)
def test_postgres_schemes_are_accepted(url: str) -> None:
    target = parse_database_url(url)
    assert target.dialect == "postgres"
    assert target.dsn == "postgresql://user:pw@db.example:5432/app"
    assert target.schema == DEFAULT_SCHEMA
    assert target.url == url
    assert target.sqlite_path == ""


def test_schema_query_parameter_sets_schema_and_is_removed_from_dsn() -> None:
    target = parse_database_url("postgresql://u:p@h:5432/db?sslmode=require&schema=tenant_1")
    assert target.schema == "tenant_1"
    assert target.dsn.startswith("postgresql://")
    assert "schema" not in target.dsn
    assert target.dsn == "postgresql://u:p@h:5432/db?sslmode=require"


def test_schema_argument_used_when_url_has_none() -> None:
    assert parse_database_url("postgres://h/db", schema="other").schema == "other"
    # the query parameter wins over the argument
    assert parse_database_url("postgres://h/db?schema=from_url", schema="other").schema == "from_url"


@pytest.mark.parametrize(
    "schema",
    [
        "Upper",
        'we"ird',
        "x" * 64,
        "1abc",
        'x"; drop table t; --',
        "has space",
        "",
        "dash-name",
    ],
)
def test_invalid_schema_names_are_refused(schema: str) -> None:
    with pytest.raises(ConfigurationError, match="schema name"):
        parse_database_url("postgresql://h/db", schema=schema)


def test_invalid_schema_in_query_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="schema name"):
        parse_database_url("postgresql://h/db?schema=Bad%22Name")


def test_schema_of_63_bytes_is_accepted() -> None:
    assert parse_database_url("postgresql://h/db", schema="s" * 63).schema == "s" * 63


def test_sqlite_relative_path() -> None:
    target = parse_database_url("sqlite:///data/pgtasks.sqlite3")
    assert target.dialect == "sqlite"
    assert target.sqlite_path == "data/pgtasks.sqlite3"
    assert target.dsn == ""


def test_sqlite_absolute_path() -> None:
    target = parse_database_url("sqlite:////var/lib/pgtasks.sqlite3")
    assert target.dialect == "sqlite"
    assert target.sqlite_path == "/var/lib/pgtasks.sqlite3"


def test_sqlite_query_string_is_not_part_of_the_path() -> None:
    assert parse_database_url("sqlite:///a.db?timeout=5").sqlite_path == "a.db"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite://:memory:"])
def test_sqlite_in_memory_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="in-memory"):
        parse_database_url(url)


def test_sqlite_with_host_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="sqlite:///relative/path"):
        parse_database_url("sqlite://host/file.db")


@pytest.mark.parametrize(
    ("url", "system"),
    [
        ("redis://localhost:6379/0", "Redis"),
        ("rediss://:secret@localhost:6380/0", "Redis"),
        ("amqp://guest:guest@localhost:5672//", "RabbitMQ"),
        ("sqs://", "Amazon SQS"),
    ],
)
def test_broker_urls_are_refused_naming_the_system(url: str, system: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_database_url(url)
    message = str(info.value)
    assert system in message
    assert "PGTASKS_DATABASE_URL" in message


def test_broker_url_message_hides_password() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_database_url("amqp://guest:topsecret@localhost:5672//")
    assert "topsecret" not in str(info.value)
    assert "***" in str(info.value)


def test_typo_scheme_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown scheme 'postgresq'"):
        parse_database_url("postgresq://u:p@h/db")


@pytest.mark.parametrize("url", ["localhost:5432/db", "pgtasks.sqlite3", ""])
def test_string_without_scheme_separator_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="is not a URL"):
        parse_database_url(url)


def test_non_string_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="is not a URL"):
        parse_database_url(None)  # type: ignore[arg-type]


def test_redact_url_hides_password() -> None:
    redacted = redact_url("postgresql://alice:s3cr3t@db:5432/app")
    assert redacted == "postgresql://alice:***@db:5432/app"
    assert "s3cr3t" not in redacted


def test_redact_url_without_password_is_unchanged() -> None:
    assert redact_url("postgresql://alice@db/app") == "postgresql://alice@db/app"
    assert redact_url("sqlite:///x.db") == "sqlite:///x.db"


def test_display_url_is_redacted() -> None:
    target = parse_database_url("postgresql://alice:s3cr3t@db/app")
    assert target.display_url == "postgresql://alice:***@db/app"


def test_resolve_prefers_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "postgresql://env/db")
    assert resolve_database_url("postgresql://arg/db") == "postgresql://arg/db"


def test_resolve_uses_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGTASKS_DATABASE_URL", "postgresql://env/db")
    assert resolve_database_url(None) == "postgresql://env/db"


def test_resolve_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    assert resolve_database_url(None) == DEFAULT_DATABASE_URL == "sqlite:///pgtasks.sqlite3"


def test_a_query_value_with_spaces_reaches_libpq_intact() -> None:
    from psycopg.conninfo import conninfo_to_dict

    from pgtasks.sysdb.urls import parse_database_url

    target = parse_database_url("postgresql://u@h/db?options=-c%20work_mem%3D64MB&schema=s")
    assert conninfo_to_dict(target.dsn)["options"] == "-c work_mem=64MB"


@pytest.mark.parametrize(
    ("url", "dsn"),
    [
        ("postgresql:///app", "postgresql:///app"),
        (
            "postgres:///app?host=/var/run/postgresql&schema=t1",
            "postgresql:///app?host=%2Fvar%2Frun%2Fpostgresql",
        ),
        ("postgresql://", "postgresql://"),
    ],
)
def test_an_empty_authority_is_kept_for_libpq(url: str, dsn: str) -> None:
    """libpq's socket form: urlunsplit would drop the '//' of an empty authority."""
    assert parse_database_url(url).dsn == dsn


def test_a_redacted_socket_url_keeps_its_empty_authority() -> None:
    assert redact_url("postgresql:///app?host=/tmp&password=pw") == "postgresql:///app?host=/tmp&password=***"
    assert redact_url("sqlite:////var/lib/app.sqlite3") == "sqlite:////var/lib/app.sqlite3"


def test_what_libpq_cannot_read_is_refused_at_once_without_the_password() -> None:
    """Both were a psycopg traceback at the first connection, the first one quoting the password."""
    reasons = {
        "postgresql://u:se%zzcret@db/app": 'invalid percent-encoded token: "***"',
        "postgresql://u:sekrit@db/app?bogus=1": 'invalid URI query parameter: "bogus"',
    }
    for url, reason in reasons.items():
        with pytest.raises(ConfigurationError) as refused:
            parse_database_url(url)
        assert str(refused.value) == f"database URL {redact_url(url)!r} cannot be used: {reason}"
        assert "zzcret" not in str(refused.value) and "sekrit" not in str(refused.value)


def test_a_url_that_cannot_be_split_is_refused_without_showing_it() -> None:
    url = "postgresql://u:sek rit@[::1"
    with pytest.raises(ConfigurationError) as refused:
        parse_database_url(url)
    assert str(refused.value) == (
        "database URL 'postgresql://(unreadable URL, not shown)' is not a valid URL: Invalid IPv6 URL"
    )
    assert redact_url("redis://:sekrit@[::1") == "redis://(unreadable URL, not shown)"

"""Parsing of database URLs into a dialect and its connection settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.identifiers import validate_identifier

DEFAULT_DATABASE_URL = "sqlite:///pgtasks.sqlite3"
DEFAULT_SCHEMA = "pgtasks"
DATABASE_URL_ENV = "PGTASKS_DATABASE_URL"

_BROKER_ONLY = {
    "redis": "Redis",
    "rediss": "Redis",
    "amqp": "RabbitMQ",
    "amqps": "RabbitMQ",
    "pyamqp": "RabbitMQ",
    "librabbitmq": "RabbitMQ",
    "sqs": "Amazon SQS",
    "memory": "kombu's in-memory transport",
    "filesystem": "kombu's filesystem transport",
    "mongodb": "MongoDB",
    "zookeeper": "ZooKeeper",
}
_POSTGRES_SCHEMES = {"postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2"}
_HINT = (
    "set App(database_url=...) or the PGTASKS_DATABASE_URL environment variable to "
    "'postgresql://user:password@host:5432/dbname' or 'sqlite:///path/to/file.sqlite3'"
)


@dataclass(frozen=True, slots=True)
class DatabaseTarget:
    """Where the system database lives: a PostgreSQL DSN plus schema, or a SQLite file."""

    dialect: str  # "postgres" or "sqlite"
    url: str
    dsn: str = ""
    sqlite_path: str = ""
    schema: str = DEFAULT_SCHEMA
    # ?pgbouncer=transaction: a transaction-pooling PgBouncer between pgtasks and PostgreSQL
    # (no session state, no server-side prepared statements, no LISTEN through it).
    transaction_pooling: bool = False
    # ?listen_url=...: a direct connection for LISTEN when the main URL goes through PgBouncer.
    listen_dsn: str = ""
    # ?read_url=...: a replica for the reads that may lag (result polling, task lists, the
    # dashboard's lists and charts); the URL itself, with this target's schema.
    read_url: str = ""

    @property
    def display_url(self) -> str:
        """The URL with any password replaced by ``***``, safe to print."""
        return redact_url(self.url)


NESTED_URLS = ("listen_url", "read_url")  # URL parameters that hold a URL of their own


def redact_url(url: str) -> str:
    """Hide the password of a URL (in the user part or a ``password=`` parameter) so it can be
    logged or shown in a banner."""
    try:
        parts = urlsplit(url)
    except ValueError:  # unreadable, so its password cannot be found: show none of it
        return f"{url.partition('://')[0]}://(unreadable URL, not shown)"
    # a second URL, with its own password, inside this one
    nested = "listen_url" in parts.query or "read_url" in parts.query
    if parts.password is None and "password" not in parts.query.lower() and not nested:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(":" + parts.password + "@", ":***@", 1)
    query = parts.query
    if "password" in query.lower() or nested:
        pairs = parse_qsl(query, keep_blank_values=True)
        shown = [
            (k, "***" if k.lower() == "password" else redact_url(v) if k in NESTED_URLS else v)
            for k, v in pairs
        ]
        query = urlencode(shown, safe="*:/@")
    return _joined(parts._replace(netloc=netloc, query=query))


def resolve_database_url(url: str | None) -> str:
    """The URL given, else ``PGTASKS_DATABASE_URL``, else the embedded SQLite default."""
    return url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def _joined(parts: SplitResult) -> str:
    """``parts`` as a URL, keeping an empty authority: urlunsplit drops the '//' of
    'postgresql:///db' (libpq's form for a Unix socket), and libpq refuses 'postgresql:/db'."""
    url = urlunsplit(parts)
    if not parts.netloc and parts.scheme:
        url = f"{parts.scheme}://" + url.removeprefix(f"{parts.scheme}:").removeprefix("//")
    return url


def parse_database_url(url: str, schema: str = DEFAULT_SCHEMA) -> DatabaseTarget:
    """Check that pgtasks can use ``url`` and say how to connect to it.

    Broker URLs of other systems (redis://, amqp://, ...) and anything that is not a
    PostgreSQL or SQLite URL fail at once with a message saying what to set instead.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ConfigurationError(f"database URL {url!r} is not a URL; {_HINT}")
    scheme = url.split("://", 1)[0].lower()
    if scheme in _BROKER_ONLY:
        raise ConfigurationError(
            f"pgtasks cannot use the {_BROKER_ONLY[scheme]} URL {redact_url(url)!r}: pgtasks "
            f"keeps tasks, results and schedules in PostgreSQL (or SQLite); {_HINT}"
        )
    if scheme in _POSTGRES_SCHEMES:
        validate_identifier(schema, "schema name")
        parts = _split(url)
        ours = ("schema", "pgbouncer", *NESTED_URLS)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ours]
        given = dict(parse_qsl(parts.query))
        schema = given.get("schema", schema)
        validate_identifier(schema, "schema name")
        pooling = given.get("pgbouncer", "session")
        if pooling not in ("transaction", "session"):
            raise ConfigurationError(
                f"database URL {redact_url(url)!r}: pgbouncer={pooling!r} is not a pooling mode; "
                "use pgbouncer=transaction behind a transaction-pooling PgBouncer (session pooling "
                "needs nothing)"
            )
        listen_dsn = ""
        if "listen_url" in given:
            listen = parse_database_url(given["listen_url"], schema)
            if listen.dialect != "postgres" or listen.transaction_pooling:
                raise ConfigurationError(
                    f"database URL {redact_url(url)!r}: listen_url must be a direct PostgreSQL URL "
                    "(LISTEN cannot go through a transaction-pooling PgBouncer)"
                )
            listen_dsn = listen.dsn
        read_url = given.get("read_url", "")
        if read_url and parse_database_url(read_url, schema).dialect != "postgres":
            raise ConfigurationError(
                f"database URL {redact_url(url)!r}: read_url must be a PostgreSQL URL (a replica of "
                "this database)"
            )

        # quote, not quote_plus: libpq reads "+" in a URI literally (options=-c%20x=y).
        kept = urlencode(query, quote_via=quote)
        dsn = _joined(parts._replace(scheme="postgresql", query=kept, fragment=""))
        _check_conninfo(url, dsn)
        return DatabaseTarget(
            "postgres",
            url=url,
            dsn=dsn,
            schema=schema,
            transaction_pooling=pooling == "transaction",
            listen_dsn=listen_dsn,
            read_url=read_url,
        )
    if scheme == "sqlite":
        rest, _, sqlite_query = url[len("sqlite://") :].partition("?")
        mode = dict(parse_qsl(sqlite_query)).get("mode", "")
        if rest in ("", "/", "/:memory:", ":memory:") or "memory" in mode:
            raise ConfigurationError(
                f"database URL {url!r}: an in-memory SQLite database cannot be shared by the "
                "worker and its producers; name a file, e.g. 'sqlite:///pgtasks.sqlite3'"
            )
        if not rest.startswith("/"):
            raise ConfigurationError(
                f"database URL {url!r}: a SQLite URL is 'sqlite:///relative/path' or "
                "'sqlite:////absolute/path'"
            )
        path = rest[1:]
        return DatabaseTarget("sqlite", url=url, sqlite_path=str(Path(path)), schema=schema)
    raise ConfigurationError(f"database URL {redact_url(url)!r} has unknown scheme {scheme!r}; {_HINT}")


def _split(url: str) -> SplitResult:
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise ConfigurationError(f"database URL {redact_url(url)!r} is not a valid URL: {exc}") from None


def _check_conninfo(url: str, dsn: str) -> None:
    """Refuse at once what libpq cannot read (an unknown parameter, a bad %-escape), in words
    that never show the password: libpq quotes the token it stopped at, which may be it."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(dsn)
    except Error as exc:
        reason = str(exc).strip()
        for secret in _passwords(url):
            reason = reason.replace(secret, "***")
        raise ConfigurationError(f"database URL {redact_url(url)!r} cannot be used: {reason}") from None


def _passwords(url: str) -> list[str]:
    """The passwords written in ``url`` (user part, ``password=`` parameters), as written and
    decoded, longest first."""
    parts = urlsplit(url)
    found = [parts.password or ""]
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if key.lower() == "password":
            found.append(value)
    found += [unquote(secret) for secret in found]
    return sorted({secret for secret in found if secret}, key=len, reverse=True)

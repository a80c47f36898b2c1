"""validate_identifier and quote_identifier."""

from __future__ import annotations

import pytest

from pgtasks.sysdb.errors import ConfigurationError
from pgtasks.sysdb.identifiers import quote_identifier, validate_identifier


@pytest.mark.parametrize("name", ["pgtasks", "_private", "a1_b2", "x" * 63])
def test_valid_identifiers_are_returned(name: str) -> None:
    assert validate_identifier(name) == name
    assert quote_identifier(name) == f'"{name}"'


@pytest.mark.parametrize(
    "name",
    ["", "Upper", "1st", 'a"b', "a b", "a-b", "a;b", 'x"; drop table t; --', "é", "x" * 64],
)
def test_invalid_identifiers_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid queue"):
        validate_identifier(name, "queue")
    with pytest.raises(ConfigurationError):
        quote_identifier(name)


@pytest.mark.parametrize("value", [None, 3, b"abc"])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(ConfigurationError):
        validate_identifier(value)  # type: ignore[arg-type]


def test_length_error_mentions_limit() -> None:
    with pytest.raises(ConfigurationError, match="63 bytes"):
        validate_identifier("a" * 64, "schema name")

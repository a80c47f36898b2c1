"""The dashboard's guard: parsing --basic-auth, refusing exposure without it, checking
credentials and CSRF tokens."""

from __future__ import annotations

import base64

import pytest

from pgtasks.dashboard.security import Guard, check_exposure, parse_basic_auth
from pgtasks.engine.errors import ConfigurationError


def _basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


def test_basic_auth_takes_pairs_as_flower_spells_them() -> None:
    assert parse_basic_auth("admin:s3:cret,ops:pw") == (("admin", "s3:cret"), ("ops", "pw"))
    assert parse_basic_auth(None) == ()


@pytest.mark.parametrize("bad", ["admin", "admin:", ":pw", "a:b,c"])
def test_malformed_basic_auth_is_refused_with_the_expected_form(bad: str) -> None:
    with pytest.raises(ConfigurationError, match=r"--basic-auth takes user:password"):
        parse_basic_auth(bad)


def test_only_localhost_may_go_without_authentication() -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        check_exposure(host, ())
    check_exposure("0.0.0.0", (("a", "b"),))
    with pytest.raises(ConfigurationError, match=r"'0\.0\.0\.0' without authentication"):
        check_exposure("0.0.0.0", ())


def test_credentials_and_csrf_tokens_are_checked() -> None:
    guard = Guard((("admin", "s3cret"),))
    assert guard.authenticated(_basic("admin:s3cret"))
    for header in (None, "", _basic("admin:wrong"), _basic("other:s3cret"), "Basic !!!", "Bearer x"):
        assert not guard.authenticated(header)
    assert Guard().authenticated(None)  # no credentials configured: local use
    assert guard.csrf_ok(guard.csrf_token)
    assert not guard.csrf_ok(None) and not guard.csrf_ok("forged") and not guard.csrf_ok("")
    assert Guard().csrf_token != Guard().csrf_token

"""The dashboard's guard: parsing --basic-auth, refusing exposure without it, checking
credentials and CSRF tokens."""

from __future__ import annotations

import base64

import pytest

from pgtasks.dashboard.security import Guard, check_exposure, parse_basic_auth, parse_hosts
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


def test_only_the_hosts_it_serves_are_answered_without_credentials() -> None:
    local = Guard()
    for host in ("127.0.0.1:5555", "localhost", "[::1]:5555", "LOCALHOST:80"):
        assert local.host_allowed(host), host
    for host in (None, "", "attacker.example:5555", "127.0.0.1.attacker.example"):
        assert not local.host_allowed(host), host  # DNS rebinding sends the attacker's name
    proxied = Guard(allowed_hosts=parse_hosts("board.example.com"))
    assert proxied.host_allowed("board.example.com:443") and not proxied.host_allowed("other.example")
    assert Guard((("a", "b"),), address="").host_allowed("anything.example")  # credentials guard it
    with pytest.raises(ConfigurationError, match="without a port or path"):
        parse_hosts("board.example.com:8080")


def test_cross_site_state_changes_are_named() -> None:
    from starlette.datastructures import Headers

    guard = Guard()
    assert guard.cross_site(Headers({"host": "127.0.0.1:5555"})) is None  # a script
    assert guard.cross_site(Headers({"sec-fetch-site": "cross-site"})) == "Cross-site request forbidden"
    assert guard.cross_site(Headers({"sec-fetch-site": "same-origin", "origin": "http://x"})) is None
    foreign = Headers({"host": "127.0.0.1:5555", "origin": "http://attacker.example"})
    assert guard.cross_site(foreign) == "Cross-origin request forbidden"
    assert guard.cross_site(Headers({"host": "127.0.0.1:5555", "origin": "http://127.0.0.1:5555"})) is None

"""``--uid``/``--gid`` (cli/privileges.py): a process started by root becomes that user, with
its groups, or that group, as Celery's worker and beat do before they run anything; pgtasks
ignored the flags and ran the tasks as root. Each change is made for real, in a forked child
of the test process (a process cannot give root back)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from pgtasks.cli.privileges import drop_privileges
from pgtasks.engine.errors import ConfigurationError


def in_child(body: Callable[[], str]) -> str:
    """What ``body`` returns (or raises) when run in a forked child of this process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: os calls only, then out without running the parent's cleanup
        os.close(read)
        try:
            answer = body()
        except BaseException as exc:  # reported to the parent, whatever it is
            answer = f"{type(exc).__name__}: {exc}"
        os.write(write, answer.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    return answer


def ids() -> str:
    return f"{os.getuid()} {os.geteuid()} {os.getgid()} {os.getegid()} {sorted(os.getgroups())}"


def test_root_becomes_the_user_with_its_groups_or_the_group() -> None:
    assert os.geteuid() == 0, "the suite runs as root (it starts PostgreSQL through runuser)"

    def become_nobody() -> str:
        drop_privileges("nobody", None)
        return ids()

    assert in_child(become_nobody) == "65534 65534 65534 65534 [65534]"

    def become_by_number_and_group() -> str:
        drop_privileges("65534", "0")
        return ids()

    assert in_child(become_by_number_and_group) == "65534 65534 0 0 [0]"  # nobody is in no other group

    def become_the_group_only() -> str:
        drop_privileges(None, "nogroup")
        return ids()

    assert in_child(become_the_group_only) == "0 0 65534 65534 [65534]"


def test_another_user_cannot_become_a_third_one_but_may_name_itself() -> None:
    def as_nobody_asking_for_root() -> str:
        os.setgid(65534)
        os.setuid(65534)
        drop_privileges("nobody", "nogroup")  # itself: nothing to do
        drop_privileges("root", None)
        return "changed"

    assert in_child(as_nobody_asking_for_root) == (
        "ConfigurationError: --uid root: only a process started by root can change the user it runs as"
    )


def test_unknown_users_and_groups_are_named() -> None:
    with pytest.raises(ConfigurationError, match=r"^--uid no-such-user: no such user$"):
        drop_privileges("no-such-user", None)
    with pytest.raises(ConfigurationError, match=r"^--gid no-such-group: no such group$"):
        drop_privileges(None, "no-such-group")
    drop_privileges(None, None)  # neither given: nothing changes
    assert os.geteuid() == 0

"""Unit tests of the compatibility layer: the import hook, task names, routing, states."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

from pgtasks.compat import install, installed
from pgtasks.compat.bridge.outcomes import celery_exception, celery_state
from pgtasks.compat.bridge.registration import gen_task_name
from pgtasks.compat.celery.app.routes import prepare_routers, route
from pgtasks.compat.celery.states import state
from pgtasks.sysdb.records import Status


def test_import_hook_provides_celerys_and_kombus_names_and_is_idempotent() -> None:
    install()
    first = sys.modules["celery"]
    install()
    assert sys.modules["celery"] is first and installed()
    import celery
    import celery.app.task
    import celery.utils.log
    import kombu.serialization
    from celery import Celery, Task, shared_task  # noqa: F401
    from celery.canvas import Signature  # noqa: F401
    from celery.exceptions import MaxRetriesExceededError, Retry, SoftTimeLimitExceeded  # noqa: F401
    from celery.result import AsyncResult, EagerResult  # noqa: F401
    from celery.schedules import crontab, schedule  # noqa: F401
    from celery.signals import task_prerun  # noqa: F401
    from celery.states import SUCCESS  # noqa: F401
    from kombu import Exchange, Queue  # noqa: F401

    import pgtasks.compat.celery
    import pgtasks.engine.errors

    assert celery is pgtasks.compat.celery and celery.app.task.Task is Task
    assert celery.utils.log.get_task_logger("x").parent.name == "celery.task"
    assert callable(kombu.serialization.register)
    assert SoftTimeLimitExceeded is pgtasks.engine.errors.SoftTimeLimitExceeded
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("celery.contrib.no_such_module")


def test_real_celery_is_not_installed_here() -> None:
    # The shim depends on neither celery nor kombu; uninstall() gives the names back.
    from pgtasks.compat import uninstall

    uninstall()
    try:
        assert "celery" not in sys.modules and not installed()
        # The path finder: the import hook of pgtasks_celery.pth would answer with pgtasks' own.
        for name in ("celery", "kombu", "billiard"):
            assert importlib.machinery.PathFinder.find_spec(name) is None, name
    finally:
        install()
    # billiard's names that integrations import are pgtasks' own
    billiard = [sys.modules[m] for m in sys.modules if m.startswith("billiard")]
    assert installed() and billiard and all(getattr(m, "__pgtasks_compat__", False) for m in billiard)


def test_task_names_follow_celery() -> None:
    main = types.ModuleType("__main__")
    assert gen_task_name("proj", "add", "__main__") == "proj.add"
    assert gen_task_name(None, "add", "__main__") == "__main__.add"
    assert gen_task_name("proj", "add", "proj.tasks") == "proj.tasks.add"
    assert main.__name__ == "__main__"


def test_routing_precedence_and_router_kinds() -> None:
    routers = prepare_routers(
        [
            {
                "a.exact": {"queue": "exact", "priority": 3},
                "a.*": "glob",
                re.compile(r"^b\..*x$"): {"queue": "regex"},
            },
            lambda name, args, kwargs, options, task=None, **kw: "fn" if name == "c.fn" else None,
            "tests.compat.test_units.path_router",
        ]
    )

    def queue(name: str, **options: object) -> object:
        return route(routers, name, (), {}, options, "celery")["queue"]

    assert route(routers, "a.exact", (), {}, {}, "celery") == {"queue": "exact", "priority": 3}
    assert queue("a.other") == "glob" and queue("b.yx") == "regex" and queue("c.fn") == "fn"
    assert queue("d.path") == "from-path" and queue("zzz") == "celery"
    assert queue("a.exact", queue="explicit") == "explicit"
    assert route(routers, "a.exact", (), {}, {"priority": 1}, "celery")["priority"] == 1
    from pgtasks.engine.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="task_routes entries"):
        prepare_routers([42])
    # Celery's globs: a key with '*' is an fnmatch pattern ('*' any run, dots too, or nothing;
    # '?' and '[..]' wildcards in it); in a key without '*', '?' and '[' are literal
    globs = prepare_routers(
        {
            "proj.*.add": "star",
            "a?c": "question",
            "x.[ab]": "bracket",
            "b?x*": "q-star",
            "y.[ab]*": "set-star",
        }
    )
    assert [queue_of(globs, n) for n in ("proj.x.add", "proj..add", "proj.x.add_two")] == [
        "star",
        "star",
        "d",
    ]
    assert [queue_of(globs, n) for n in ("abc", "a?c", "x.a", "x.[ab]")] == ["d", "question", "d", "bracket"]
    assert [queue_of(globs, n) for n in ("bqx1", "bx", "y.a1", "y.c1")] == ["q-star", "d", "set-star", "d"]
    with pytest.raises(ConfigurationError, match=r"holds \(task name or pattern, route\) pairs, not 'a\.\*'"):
        prepare_routers([["a.*", "glob"]])  # one pair, not wrapped in a list of pairs


def queue_of(routers: list, name: str) -> object:
    return route(routers, name, (), {}, {}, "d")["queue"]


def path_router(name: str, args: object, kwargs: object, options: object, task: object = None, **kw: object):
    return {"queue": "from-path"} if name == "d.path" else None


def test_states_map_pgtasks_statuses() -> None:
    assert celery_state(None) == "PENDING"
    assert celery_state(Status.ENQUEUED) == "PENDING" and celery_state(Status.DELAYED, retries=1) == "RETRY"
    assert (
        celery_state(Status.PENDING) == "PENDING"
        and celery_state(Status.PENDING, track_started=True) == "STARTED"
    )
    assert celery_state(Status.ERROR) == "FAILURE" and celery_state(Status.CANCELLED) == "REVOKED"
    assert celery_state(Status.MAX_RECOVERY_ATTEMPTS_EXCEEDED) == "FAILURE"
    assert state("SUCCESS") > state("PENDING") and state("PENDING") < state("STARTED")
    assert not state("CUSTOM") < state("PENDING")


def test_failures_stored_under_the_old_module_paths_come_back_as_celerys_classes() -> None:
    """Rows written before the Celery layer took Celery's module paths name
    ``pgtasks.compat.exceptions``; they still read back as the Celery exception."""
    from pgtasks.compat.celery.exceptions import Reject
    from pgtasks.compat.kombu.exceptions import DecodeError
    from pgtasks.engine.errors import TaskError
    from pgtasks.engine.failures import decode_exception

    old = '{"module": "pgtasks.compat.exceptions", "type": "Reject", "message": "no", "traceback": "tb"}'
    decoded = decode_exception(old)
    assert isinstance(decoded, TaskError)  # the engine rebuilds nothing from an unloaded module
    mapped = celery_exception(decoded)
    assert type(mapped) is Reject and mapped.reason == "no" and mapped.remote_traceback == "tb"
    kombu = TaskError("pgtasks.compat.kombu_utils.DecodeError", "bad")
    assert type(celery_exception(kombu)) is DecodeError
    unknown = TaskError("pgtasks.compat.exceptions.NoSuchError", "x")
    assert celery_exception(unknown) is unknown
    assert celery_exception(TaskError("app.MyError", "x")).type_name == "app.MyError"


def test_setting_names_cover_celerys_table() -> None:
    from pgtasks.compat.celery.app.utils import current_name

    assert current_name("CELERYD_TASK_TIME_LIMIT") == "task_time_limit"
    assert current_name("CELERY_RESULT_DBURI") == "database_url"
    assert current_name("BROKER_URL") == "broker_url" and current_name("task_routes") == "task_routes"


def test_a_group_refuses_link_and_link_error_as_celery_does(tmp_path: Path) -> None:
    from celery import Celery, group

    app = Celery("links", broker=f"sqlite:///{tmp_path / 'links.sqlite3'}")
    add = app.task(name="links.add")(lambda x, y: x + y)
    members = group(add.s(1, 1), add.s(2, 2))
    with pytest.raises(TypeError, match=r"^Cannot add link to group: use a chord$"):
        members.apply_async(link=add.s(3))
    with pytest.raises(TypeError, match=r"^Cannot add link to group: do that on individual tasks$"):
        members.apply_async(link_error=add.s(3))

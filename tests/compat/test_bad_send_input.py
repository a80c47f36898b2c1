"""Bad input to the Celery layer's send and result paths (audit of bad input, items B, C and
D): each is refused at the call with Celery's exception type and a message naming what is
wrong, never sent somewhere else, ignored, or waited on forever."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pgtasks import Client
from pgtasks.compat import install

install()

from celery import Celery, Task, group  # noqa: E402
from celery.result import GroupResult, ResultSet  # noqa: E402
from kombu import Exchange, Queue  # noqa: E402
from kombu.exceptions import EncodeError, SerializerNotInstalled  # noqa: E402


@pytest.fixture
def app(sqlite_url: str) -> Iterator[Celery]:
    application = Celery("badin", broker=sqlite_url)
    yield application
    application.close()


def _add(app: Celery) -> Any:
    @app.task(name="badin.add")
    def add(x: int, y: int = 0) -> int:
        return x + y

    return add


def _sent(app: Celery) -> list[Any]:
    client = Client(app.conf.broker_url)
    try:
        return client.list_tasks()
    finally:
        client.close()


@pytest.mark.parametrize("timeout", [math.nan, -math.inf, "nan"])
def test_get_with_a_timeout_that_never_expires_is_refused_at_once(app: Celery, timeout: Any) -> None:
    started = time.monotonic()
    waits = [
        lambda: app.AsyncResult("not-a-uuid").get(timeout=timeout),
        lambda: ResultSet([app.AsyncResult("not-a-uuid")]).join(timeout=timeout),
        lambda: GroupResult("g", [app.AsyncResult("not-a-uuid")], app=app).get(timeout=timeout),
    ]
    for wait in waits:
        with pytest.raises(ValueError, match="timeout must be a number of seconds or None, not "):
            wait()
    assert time.monotonic() - started < 5


def test_get_with_a_timeout_or_interval_that_is_not_a_number_names_it(app: Celery) -> None:
    with pytest.raises(ValueError, match="timeout must be a number of seconds or None, not 'x'"):
        app.AsyncResult("not-a-uuid").get(timeout="x")
    with pytest.raises(TypeError, match=r"timeout must be a number of seconds or None, not list \(\[\]\)"):
        ResultSet([app.AsyncResult("not-a-uuid")]).join(timeout=[])
    with pytest.raises(ValueError, match="interval must be a finite number of seconds >= 0, not -1"):
        app.AsyncResult("not-a-uuid").get(timeout=0.1, interval=-1)
    with pytest.raises(app.AsyncResult("x").TimeoutError):
        app.AsyncResult("not-a-uuid").get(timeout="0.05")  # a number's string, as Celery reads it


@pytest.mark.parametrize(
    ("task_id", "why"), [("a\x00b", "contains a NUL character"), ("\ud800", "lone surrogate")]
)
def test_an_id_no_task_can_have_is_a_value_error_not_a_driver_error(
    pg_url: str, task_id: str, why: str
) -> None:
    application = Celery("badid", broker=pg_url)
    try:
        with pytest.raises(ValueError, match=why):
            _ = application.AsyncResult(task_id).state
        with pytest.raises(ValueError, match=why):
            application.backend.get_task_meta(task_id)
        with pytest.raises(ValueError, match="AsyncResult expects a task id, not None"):
            application.AsyncResult(None)
    finally:
        application.close()


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (5, None, "args of task 'badin.add' must be a list or tuple, not int"),
        ((1,), [1], "kwargs of task 'badin.add' must be a dict, not list"),
        ((1,), "x", "kwargs of task 'badin.add' must be a dict, not str"),
        ((1,), {1: 2}, "keyword argument names of task 'badin.add' must be str, not int (1)"),
    ],
)
def test_arguments_of_the_wrong_type_are_a_type_error_naming_the_task(
    app: Celery, args: Any, kwargs: Any, message: str
) -> None:
    add = _add(app)
    with pytest.raises(TypeError, match=re.escape(message)) as refused:
        add.apply_async(args, kwargs)
    assert "check_arguments" not in str(refused.value)
    app.conf.task_always_eager = True
    with pytest.raises(TypeError, match=re.escape(message)):
        add.apply_async(args, kwargs)
    assert _sent(app) == []


def test_arguments_nested_too_deeply_are_kombus_encode_error(app: Celery) -> None:
    add = _add(app)
    deep = functools.reduce(lambda inner, _: [inner], range(100_000), 1)
    for send in (lambda: add.delay(deep), lambda: add.apply_async((deep,), headers={"h": 1})):
        with pytest.raises(
            EncodeError,
            match=r"argument 0 of task 'badin.add' cannot be serialized as json: it is nested too deeply",
        ):
            send()
    with pytest.raises(EncodeError, match="Object of type object is not JSON serializable"):
        add.delay(object())
    assert _sent(app) == []


def test_headers_that_are_not_a_dict_are_a_type_error_naming_them(app: Celery) -> None:
    with pytest.raises(TypeError, match=r"headers must be a dict, not str \('x'\)"):
        _add(app).apply_async((1, 2), headers="x")
    with pytest.raises(TypeError, match=r"headers must be a dict, not list \(\[1, 2\]\)"):
        _add(app).apply_async((1, 2), headers=[1, 2])
    sent = _add(app).apply_async((1, 2), headers=[("tenant", "a")])  # pairs, as dict() takes
    assert sent.state == "PENDING"


@pytest.mark.parametrize("option", ["link", "link_error"])
def test_a_callback_that_is_not_a_signature_is_a_type_error_naming_the_option(
    app: Celery, option: str
) -> None:
    add = _add(app)
    for value in ("not a signature", 123):
        with pytest.raises(TypeError, match=f"^{option} takes signatures and workflows, not {value!r}$"):
            add.apply_async((1, 2), **{option: value})
    assert _sent(app) == []


@pytest.mark.parametrize("queue", [123, ["q"]])
def test_a_queue_that_is_no_queue_name_is_refused_not_sent_to_the_default(app: Celery, queue: Any) -> None:
    add = _add(app)
    with pytest.raises(ValueError, match=re.escape(f"invalid queue name {queue!r}")):
        add.apply_async((1, 2), queue=queue)
    app.conf.task_routes = {"*": {"queue": 5}}
    with pytest.raises(ValueError, match="invalid queue name 5"):
        add.delay(1)
    assert _sent(app) == []


def test_an_empty_queue_name_is_the_default_queue_as_in_celery(app: Celery) -> None:
    add = _add(app)
    sent = add.apply_async((1, 2), queue="")
    app.conf.task_routes = {"*": {"queue": ""}}
    routed = add.delay(1)
    client = Client(app.conf.broker_url)
    try:
        assert [client.get_task(r.id, steps=False).queue_name for r in (sent, routed)] == ["celery", "celery"]
    finally:
        client.close()


def test_queues_given_as_kombu_queues_and_route_dicts_still_route(app: Celery) -> None:
    add = _add(app)
    client = Client(app.conf.broker_url)
    try:
        sent = add.apply_async((1,), queue=Queue("direct"))
        app.conf.task_routes = {"*": {"queue": Queue("routed")}}
        routed = add.delay(1)
        app.conf.task_routes = {"*": {"queue": "withexchange", "exchange": Exchange("e"), "routing_key": "k"}}
        with_exchange = add.delay(1)
        queues = [client.get_task(r.id, steps=False).queue_name for r in (sent, routed, with_exchange)]
    finally:
        client.close()
    assert queues == ["direct", "routed", "withexchange"]


def test_an_eta_past_the_century_cap_is_refused(app: Celery) -> None:
    with pytest.raises(
        ValueError, match=r"eta 9999-12-31T23:59:59.999999\+00:00 is more than 3162240000 seconds"
    ):
        _add(app).apply_async((1, 2), eta=dt.datetime.max)
    assert _sent(app) == []


@pytest.mark.parametrize("serializer", ["bogus", "yaml", "msgpack"])
def test_a_serializer_pgtasks_has_no_encoder_for_is_serializer_not_installed(
    app: Celery, serializer: str
) -> None:
    with pytest.raises(SerializerNotInstalled, match=f"^No encoder installed for {serializer}$"):
        _add(app).apply_async((1, 2), serializer=serializer)
    assert _sent(app) == []


def test_a_per_call_serializer_the_app_does_not_accept_is_refused(app: Celery, sqlite_url: str) -> None:
    add = _add(app)
    with pytest.raises(
        ValueError,
        match=r"serializer='pickle': not in this app's accept_content \['json'\], so its workers",
    ):
        add.apply_async((1, 2), serializer="pickle")
    with pytest.raises(ValueError, match="task_serializer 'json'"):
        group(add.s(1).set(serializer="pickle")).apply_async()
    assert _sent(app) == []
    for same in ("json", "application/json"):
        assert add.apply_async((1, 2), serializer=same).state == "PENDING"
    pickled = Celery("badin_pickle", broker=sqlite_url)
    pickled.conf.task_serializer = "pickle"
    pickled.conf.accept_content = ["json", "pickle"]
    try:
        sent = pickled.send_task("badin.add", (1, 2), serializer="pickle")
        assert pickled.engine.get_task(sent.id).serialization == "pickle"
        # accepted by the app's workers: sent, in the app's serializer
        sent = pickled.send_task("badin.add", (1, 2), serializer="json")
        assert pickled.engine.get_task(sent.id).serialization == "pickle"
    finally:
        pickled.close()
    mixed = Celery("badin_mixed", broker=sqlite_url)
    mixed.conf.accept_content = ["json", "pickle"]
    try:
        sent = mixed.send_task("badin.add", (1, 2), serializer="pickle")
        assert mixed.engine.get_task(sent.id).serialization == "json"
        with pytest.raises(EncodeError, match="argument 0"):  # what JSON cannot carry is refused
            mixed.send_task("badin.add", (object(),), serializer="pickle")
    finally:
        mixed.close()


def test_an_unknown_compression_is_a_key_error_and_kombus_names_are_accepted(app: Celery) -> None:
    add = _add(app)
    with pytest.raises(KeyError, match="unknown compression 'bogus'; kombu's are "):
        add.apply_async((1, 2), compression="bogus")
    assert add.apply_async((1, 2), compression="gzip").state == "PENDING"


def test_a_tasks_own_unknown_serializer_or_compression_fails_each_send_as_in_celery(app: Celery) -> None:
    """Celery's decorator takes any name; each ``apply_async`` publishes with it and fails."""

    @app.task(name="badin.bogus", serializer="bogus")
    def bogus() -> None: ...

    class Yaml(Task):  # type: ignore[misc]
        name = "badin.yaml"
        serializer = "yaml"

        def run(self) -> None: ...

    yaml = app.register_task(Yaml())

    @app.task(name="badin.squashed", compression="squash")
    def squashed() -> None: ...

    with pytest.raises(SerializerNotInstalled, match=r"^No encoder installed for bogus$"):
        bogus.delay()
    with pytest.raises(SerializerNotInstalled, match=r"^No encoder installed for yaml$"):
        yaml.apply_async()
    with pytest.raises(SerializerNotInstalled, match=r"^No encoder installed for bogus$"):
        group(bogus.s(), yaml.s()).apply_async()
    with pytest.raises(KeyError, match="unknown compression 'squash'; kombu's are "):
        squashed.delay()
    assert _sent(app) == []
    assert bogus.apply().state == "SUCCESS"  # run here, nothing published: Celery's apply too
    # the call's own option wins over the task's, as in Celery
    assert bogus.apply_async(serializer="json").state == "PENDING"
    assert squashed.apply_async(compression="gzip").state == "PENDING"
    app.conf.task_always_eager = True  # eagerly Celery encodes the arguments with it
    with pytest.raises(SerializerNotInstalled, match=r"^No encoder installed for bogus$"):
        bogus.delay()
    with pytest.raises(SerializerNotInstalled, match=r"^No encoder installed for msgpack$"):
        _add(app).apply_async((1, 2), serializer="msgpack")
    assert squashed.delay().state == "SUCCESS"  # Celery does not compress an eager call


def test_a_tasks_own_serializer_the_app_does_not_accept_is_refused_at_the_send(app: Celery) -> None:
    @app.task(name="badin.pickled", serializer="pickle")
    def pickled(x: int) -> int:
        return x

    with pytest.raises(
        ValueError,
        match=r"^task 'badin.pickled' has serializer='pickle': not in this app's accept_content \['json'\]",
    ):
        pickled.delay(1)
    assert _sent(app) == []

    @app.task(name="badin.plain", serializer="application/json")
    def plain(x: int) -> int:
        return x

    assert plain.delay(1).state == "PENDING"  # the app's own serializer, by its content type
    accepting = Celery("badin_accepting", broker=app.conf.broker_url)
    accepting.conf.accept_content = ["json", "pickle"]
    try:
        task = accepting.task(name="badin.pickled2", serializer="pickle")(lambda x: x)
        sent = task.delay(1)  # its workers read pickle: sent, in the app's serializer
        assert accepting.engine.get_task(sent.id).serialization == "json"
    finally:
        accepting.close()


def test_an_on_off_setting_whose_text_celery_would_read_as_on_is_refused_where_it_is_read(
    app: Celery,
) -> None:
    """Celery reads ``'maybe'`` as on: refused by name (``'false'`` is on with a warning, see
    test_worker_settings)."""
    add = _add(app)
    app.conf.task_always_eager = "maybe"
    with pytest.raises(ValueError, match=r"^task_always_eager must be True or False, not 'maybe'$"):
        add.delay(1)
    with pytest.raises(ValueError, match=r"^task_always_eager must be True or False, not 'maybe'$"):
        group(add.s(1)).apply_async()
    assert _sent(app) == []
    app.conf.task_always_eager = "True"  # what Celery reads it as, too
    assert add.delay(1).get() == 1
    app.conf.task_always_eager = False
    sent = add.delay(1)
    app.conf.task_track_started = "x"
    with pytest.raises(ValueError, match=r"^task_track_started must be True or False, not 'x'$"):
        _ = sent.state
    app.conf.task_track_started = 1
    assert sent.state == "PENDING"


def test_the_dashboard_checks_arguments_as_apply_async_does(app: Celery) -> None:
    """``app.check_task_arguments``, what Flower's async-apply and apply ask before sending:
    the task's own check (bound tasks without ``self``, nothing with ``typing=False``)."""
    add = _add(app)

    @app.task(name="badin.bound", bind=True)
    def bound(self: Task, x: int) -> int:
        return x

    @app.task(name="badin.loose", typing=False)
    def loose(x: int) -> int:
        return x

    with pytest.raises(TypeError, match=re.escape("add() too many positional arguments")):
        app.check_task_arguments("badin.add", [1, 2, 3], {})
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        app.check_task_arguments("badin.bound", [], {})
    app.check_task_arguments("badin.add", [1], {"y": 2})
    app.check_task_arguments("badin.bound", [1], {})
    app.check_task_arguments("badin.loose", [1, 2, 3], {})  # as apply_async: not checked
    app.check_task_arguments("badin.unknown", [1, 2, 3], {})  # not registered here: not checked
    with pytest.raises(TypeError, match="too many positional arguments"):
        add.apply_async((1, 2, 3))
    loose.apply_async((1, 2, 3))
    assert [t.name for t in _sent(app)] == ["badin.loose"]


def test_revoke_takes_one_id_or_any_iterable_of_ids_and_names_what_is_neither(app: Celery) -> None:
    """Celery's ``maybe_list``: one id, or any iterable but a string. ``revoke(123)`` and
    ``revoke(None)`` were "'int' object is not iterable"."""
    with pytest.raises(TypeError, match=r"^revoke takes a task id or a list of task ids, not None$"):
        app.control.revoke(None)
    with pytest.raises(TypeError, match=r"^a task id must be a string, not int \(123\)$"):
        app.control.revoke(123)
    app.control.revoke(iter(["gen-1", "gen-2"]))
    app.control.revoke({"set-1"})
    assert app.AsyncResult("gen-2").state == app.AsyncResult("set-1").state == "REVOKED"


def test_revoke_takes_a_uuid_as_the_task_id_it_spells(app: Celery) -> None:
    """A project that keeps task ids in a UUID column revokes them as read (celery-director's
    ``cancel``); that was "a task id must be a string, not UUID"."""
    one, other = uuid.uuid4(), uuid.uuid4()
    app.control.revoke(one, terminate=True)
    app.control.revoke([other])
    assert app.AsyncResult(str(one)).state == app.AsyncResult(str(other)).state == "REVOKED"


def test_a_signature_with_arguments_of_the_wrong_kind_names_the_task(app: Celery) -> None:
    """Were "'int' object is not iterable" and "cannot convert dictionary update sequence
    element #0 to a sequence" (Celery's words too); a string was read one argument a letter."""
    from celery import signature

    add = _add(app)
    for build in (lambda: signature("badin.add", args=5), lambda: add.s(1).clone(args=5)):
        with pytest.raises(
            TypeError, match=r"^args of signature 'badin.add' must be a list or tuple, not int$"
        ):
            build()
    with pytest.raises(TypeError, match=r"^args of signature 'badin.add' must be a list or tuple, not str$"):
        signature("badin.add", args="12")
    with pytest.raises(TypeError, match=r"^kwargs of signature 'badin.add' must be a dict, not list$"):
        signature("badin.add", kwargs=[1])
    assert signature("badin.add", args=iter([1]), kwargs=[("y", 2)]).args == (1,)  # as dict() and tuple()
    assert _sent(app) == []


def test_purge_reads_a_string_as_queue_names_and_refuses_a_name_no_queue_can_have(app: Celery) -> None:
    """``purge(queues='mail')`` purged the queues 'm', 'a', 'i' and 'l' (and not 'mail')."""
    add = _add(app)
    in_mail, in_m = add.apply_async((1,), queue="mail"), add.apply_async((1,), queue="m")
    with pytest.raises(ValueError, match=r"^invalid queue name 'a b': use letters"):
        app.control.purge(queues=["a b"])
    assert app.control.purge(queues="mail") == 1
    assert (in_mail.state, in_m.state) == ("REVOKED", "PENDING")


def test_map_starmap_and_chunks_name_items_of_the_wrong_kind(app: Celery) -> None:
    """Each was Python's "'int' object is not iterable" (Celery's too)."""
    add = _add(app)
    refusals = [
        (lambda: add.chunks(5, 2), "chunks takes an iterable of items, not int"),
        (lambda: add.map(5), "map takes an iterable of items, not int"),
        (lambda: add.starmap("12"), "starmap takes an iterable of items, not str"),
        (lambda: add.starmap([(1, 2), 3]), "starmap item 1 must be a list or tuple of arguments, not int"),
        (lambda: add.chunks([(1, 2), 3], 1), "chunks item 1 must be a list or tuple of arguments, not int"),
    ]
    for build, message in refusals:
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            build()
    sent = add.chunks(zip(range(3), range(3), strict=True), 2).apply_async()
    assert len(sent.results) == 2  # a group of two chunks

"""Issue 29, entries 1 and 2, on a real `pgtasks worker` (one for the module): what happens
when part of a canvas fails, as Celery documents it (Canvas: "Chords", "Error handling",
"Group Callbacks and Error Handling"; Calling: "Linking"; the ``task_allow_error_cb_on_chord_header``
setting) and as the real Celery 5 on Redis was seen doing. The scenarios are in
tests/compat/apps/canvas_failures.py and what each must observe in canvas_expected.py;
test_celery_reference.py runs the same scenarios against the real Celery. Every wait is
short: a scenario that does not happen fails in seconds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import chain, chord, group
from celery.exceptions import ChordError
from celery.result import GroupResult

from tests.compat.apps import canvas_errors_app as proj
from tests.compat.apps.canvas_expected import EXPECTED
from tests.compat.apps.canvas_probe import WAIT, run
from tests.support.celery_worker import module_celery_worker
from tests.support.inprocess import wait_for
from tests.support.ledger import lines_of

MODULE = "tests.compat.apps.canvas_errors_app"


@pytest.fixture(scope="module")
def ledger(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    proj.app.conf.task_always_eager = False
    folder = tmp_path_factory.mktemp("canvas-failures")
    with module_celery_worker(proj.app, MODULE, pg_server_url, folder, "failures-w1", concurrency=4) as path:
        yield path


def observe(name: str, ledger: Path) -> None:
    assert run(name, ledger) == EXPECTED[name]


@pytest.mark.parametrize(
    "name",
    [
        "header_task_fails",
        "header_chain_fails_at_start",
        "header_chain_fails_in_the_middle",
        "header_chain_fails_at_the_end",
        "header_group_member_fails",
        "several_header_tasks_fail",
        "nested_chord_header_fails",
    ],
)
def test_a_failing_header_task_fails_the_chord(ledger: Path, name: str) -> None:
    """The chord's result fails with ``ChordError`` naming the header task that failed and
    its exception (``Dependency <id> raised Expected(...)``); read by its id, ``get()``
    raises it and ``get(propagate=False)`` returns it; the body never runs. ``get()`` on the
    result ``delay()`` returned raises the header task's own exception first: Celery's
    ``get`` follows the result's parents (``follow_parents=True``) and re-raises a failed
    parent's error. With several failures, the first to fail (in time) is named.

    Seen on Celery 5 with Redis, and where pgtasks follows the documentation instead: a
    header chain that fails before its end is named by its last task there (not the task
    that failed), and a chord whose header holds a failing chord never ends (PENDING
    forever; ``get`` by id times out)."""
    observe(name, ledger)


@pytest.mark.parametrize(
    "name", ["chord_in_a_chain_fails", "chord_in_a_group_fails", "chord_after_a_failed_chord"]
)
def test_a_failing_chord_inside_a_chain_or_group(ledger: Path, name: str) -> None:
    """A chord in a chain: its body fails with ChordError, and so does the task after it
    (read by id, the chain's result raises the ChordError; as sent, the header task's own
    error, from its parents). A chord in a group: the group's ``get`` raises the ChordError
    and, with ``propagate=False``, returns it in the chord's place beside the other values.
    A chord chained after a failed chord fails with the first chord's ChordError, as is (it
    names the header task that failed, as in Celery; not a ChordError about a ChordError)."""
    observe(name, ledger)


def test_a_revoked_header_task_fails_the_chord(ledger: Path) -> None:
    """A header task revoked while it waits fails the chord as a failure does (Celery marks
    it through ``on_chord_part_return``): ``ChordError`` naming it, about
    ``TaskRevokedError``; it reads REVOKED; the body never runs. Today the body waits
    forever."""
    observe("revoked_header_task", ledger)


def test_errbacks_of_a_task_in_every_calling_style(ledger: Path) -> None:
    """Each errback of ``link_error=[...]`` (and ``on_error``) is called once. Celery picks
    the style by the errback's function: one that takes more than one positional argument
    is called in the failing worker with ``(request, exc, traceback)`` (the request of the
    failed task); one that takes one (or is bound, ``bind=True``) is sent as a task with the
    failed task's id, its parent being the failed task. An immutable signature (``si``) gets
    none of these arguments, in either style."""
    observe("task_errbacks_of_every_style", ledger)


def test_errbacks_of_a_chain_and_of_its_children(ledger: Path) -> None:
    """A chain's errbacks (``link_error`` on the chain, or ``apply_async(link_error=)``) are
    linked to each of its tasks: called once, for the task that failed (its id, its
    request). Given both ways, Celery uses only those of ``apply_async``. An errback of each
    child: only the one that ran and failed calls its own."""
    observe("chain_errbacks", ledger)
    observe("chain_children_errbacks", ledger)


def test_a_groups_errback_is_called_for_each_failed_member(ledger: Path) -> None:
    """A group passes its errback (a copy, as mutable as given) to every member: called once
    per failed member, with that member's id or request."""
    observe("group_errback_per_failed_member", ledger)


@pytest.mark.parametrize(
    "name",
    ["chord_errbacks_when_the_header_fails", "chord_errbacks_when_the_body_fails", "chord_body_errback"],
)
def test_a_chords_errbacks(ledger: Path, name: str) -> None:
    """A chord's errback is linked to its body: called once whether a header task or the body
    fails. When the header fails, Celery calls it for the body (the body's id; a request
    whose id is the body's, with the ``ChordError``); when the body fails, with the body's
    id and its own exception. An errback on the body alone behaves the same."""
    observe(name, ledger)


@pytest.mark.parametrize(
    "name",
    [
        "header_errbacks_with_the_setting",
        "header_errbacks_without_the_setting",
        "nested_chord_header_errback_once",
    ],
)
def test_task_allow_error_cb_on_chord_header(ledger: Path, name: str) -> None:
    """With ``task_allow_error_cb_on_chord_header`` (read where the chord is built), a chord's
    errback is also linked to each header task: called for each failed header task and once
    for the body (3 times for two failures), for a chord written as ``chain(group, task)``
    too; errbacks linked to header tasks and to the body separately are each called once.
    Without it (the default) the errback is called once, and a chord nested in the header
    calls it once, not once per level (Celery on Redis then leaves the outer chord PENDING
    forever: pgtasks fails it, as documented)."""
    observe(name, ledger)


def test_a_replacement_with_its_own_errbacks_keeps_both(ledger: Path) -> None:
    """A task with an errback, or a chain with one, whose task is replaced (``self.replace``)
    by a chain carrying an errback of its own: when the replacement fails, both errbacks are
    called, once each, and the result raises the replacement's error."""
    observe("replaced_by_a_chain_with_its_own_errback", ledger)


def test_a_failing_header_fails_every_body_type_with_its_error(ledger: Path) -> None:
    """``chain(group(ok, fail), body)``: ``get()`` on the handle raises the header task's own
    error whatever the body is (a task, a chain, a group, a chord), as in Celery, which fails
    each member of a group body with that error (pgtasks: the members read ChordError, and
    the group's ``get()`` follows its parents to the header's error)."""
    bodies = [
        proj.add.si(9, 7),
        chain(proj.add.si(9, 7), proj.add.si(5, 7)),
        group([proj.add.si(9, 7), proj.add.si(5, 7)]),
        chord(group([proj.add.si(1, 1), proj.add.si(2, 2)]), proj.add.si(10, 10)),
    ]
    handles = [chain(group([proj.add.si(15, 7), proj.fail.si()]), body).apply_async() for body in bodies]
    for handle in handles:
        with pytest.raises(proj.Expected):
            handle.get(timeout=WAIT)
    assert isinstance(handles[2], GroupResult)
    with pytest.raises(ChordError):  # a member read by its id: no parents to follow
        proj.app.AsyncResult(handles[2].results[0].id).get(timeout=WAIT)


@pytest.mark.parametrize("style", ["id", "request"])
def test_a_canvas_that_reuses_a_finished_task_id_goes_on(ledger: Path, style: str) -> None:
    """A signature frozen once and sent in two canvases (Celery's own suite does this): the
    second send does not run the task again (pgtasks keeps one task per id) but passes its
    recorded failure on, so the second canvas fails with it instead of waiting forever, and
    its errback (id or request style) is called for it."""
    token = uuid.uuid4().hex
    errback = (
        proj.errback_with_id.s(token=token) if style == "id" else proj.errback_with_request.s(token=token)
    )
    failing = proj.fail.s()
    fail_id = failing.freeze().id
    steps = chain(proj.identity.si(42), failing, proj.identity.si(42))
    first = chord((steps,), proj.identity.s())
    first.link_error(errback)
    body_id = first.body.freeze().id
    second = chord((proj.identity.si(42),), steps)
    second.link_error(errback)
    for flow in (first, second):
        with pytest.raises(proj.Expected):
            flow.delay().get(timeout=WAIT)

    def called() -> list[str]:
        return [line.split()[2] for line in lines_of(ledger) if line.split()[:2] == [style, token]]

    wait_for(lambda: len(called()) == 2, WAIT, "both errbacks")
    assert called() == [body_id, fail_id]


def test_an_errback_of_a_standalone_chord_body_keeps_its_bytes(ledger: Path) -> None:
    """An errback its worker calls (``mark_here`` takes ``request, exc, traceback``) with a
    bytes argument, linked to the body of a chord sent alone, gets its bytes back when the
    body fails (the body's stored meta is rewritten when the chord is planned)."""
    token = uuid.uuid4().hex
    flow = chord((proj.identity.si(1),), proj.fail.s())
    flow.link_error(proj.mark_here.si(token.encode()))
    with pytest.raises(proj.Expected):
        flow.delay().get(timeout=WAIT)
    wait_for(lambda: f"mark {token.encode()!r}" in lines_of(ledger), WAIT, "the errback with bytes")

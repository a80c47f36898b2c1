"""Issue 29, entries 1 and 2: what happens when something fails. A chord whose header fails
(a task, a chain at its start, middle or end, a group member, several members, a nested chord,
a chord inside a chain or a group, a revoked header task), and errbacks of every shape (a
task's in each calling style, a chain's, its children's, a group's per failed member, a
chord's, its body's, ``task_allow_error_cb_on_chord_header``, a nested chord, a replacement
carrying its own). See canvas_probe.py for how scenarios observe."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import chain, chord, group
from celery.result import AsyncResult

from tests.compat.apps import canvas_errors_app as proj
from tests.compat.apps.canvas_errors_app import (
    add,
    errback_bound,
    errback_with_id,
    errback_with_request,
    fail,
    identity,
    mark,
    mark_here,
    record,
    replaced_by_failing_chain,
    tsum,
)
from tests.compat.apps.canvas_probe import WAIT, Probe, by_id, chord_failure, scenario, wait_get


# -- 1. a chord whose header fails ------------------------------------------------------------
@scenario
def header_task_fails(p: Probe) -> dict[str, Any]:
    token, failing = p.token(), fail.si("h")
    p.role(fail=failing.freeze())
    res = chord([identity.si(1), failing, identity.si(2)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def header_chain_fails_at_start(p: Probe) -> dict[str, Any]:
    token, failing, after = p.token(), fail.si("h"), identity.si(2)
    p.role(fail=failing.freeze(), after=after.freeze())
    res = chord([identity.si(1), chain(failing, after)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def header_chain_fails_in_the_middle(p: Probe) -> dict[str, Any]:
    token, failing, after = p.token(), fail.s(), identity.si(3)
    p.role(fail=failing.freeze(), after=after.freeze())
    res = chord([identity.si(1), chain(identity.si(2), failing, after)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def header_chain_fails_at_the_end(p: Probe) -> dict[str, Any]:
    token, failing = p.token(), fail.s()
    p.role(fail=failing.freeze())
    res = chord([identity.si(1), chain(identity.si(2), failing)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def header_group_member_fails(p: Probe) -> dict[str, Any]:
    token, failing = p.token(), fail.si("g")
    p.role(fail=failing.freeze())
    res = chord([identity.si(1), group(identity.si(2), failing)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def several_header_tasks_fail(p: Probe) -> dict[str, Any]:
    token, first, second = p.token(), fail.si(1), fail.si(3)
    p.role(fail=first.freeze())
    p.role(fail=second.freeze())  # either may be named: the first to fail, in time
    res = chord([first, identity.si(2), second], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def nested_chord_header_fails(p: Probe) -> dict[str, Any]:
    token, failing, inner_body = p.token(), fail.si("n"), identity.si("inner body")
    p.role(fail=failing.freeze(), inner_body=inner_body.freeze())
    inner = chord([identity.si(1), failing], inner_body)
    res = chord([inner, identity.si(2)], record.s(token)).delay()
    p.role(body=res)
    return chord_failure(p, res, token)


@scenario
def chord_in_a_chain_fails(p: Probe) -> dict[str, Any]:
    """chain(a, chord(header with a failure, body), c): the chain's own result too."""
    token, failing = p.token(), fail.s()
    body = record.s(token)
    p.role(fail=failing.freeze(), body=body.freeze())
    res = chain(identity.si(1), chord([identity.s(), failing], body), add.s(10)).delay()
    p.role(last=res)
    return {
        "last_by_id": p.outcome(wait_get(by_id(res))),
        "last_as_sent": p.outcome(wait_get(res)),
        "body_by_id": p.outcome(wait_get(AsyncResult(body.id, app=proj.app))),
        "body_ran": p.entries("ran", token),
    }


@scenario
def chord_after_a_failed_chord(p: Probe) -> dict[str, Any]:
    """chain(chord(header with a failure, body), chord(header, body)): the second chord's
    header never runs, and its body fails with the first chord's error (naming the task
    that failed, not nested in a second ChordError)."""
    token, failing = p.token(), fail.si("c1")
    p.role(fail=failing.freeze())
    res = chain(chord([failing], tsum.s()), chord([identity.s(), identity.s()], record.s(token))).delay()
    return {
        "last_by_id": p.outcome(wait_get(by_id(res), propagate=False)),
        "last_as_sent": p.outcome(wait_get(res)),
        "body_ran": p.entries("ran", token),
    }


@scenario
def chord_in_a_group_fails(p: Probe) -> dict[str, Any]:
    token, failing = p.token(), fail.si("g")
    p.role(fail=failing.freeze())
    res = group(chord([failing, identity.si(1)], record.s(token)), identity.si(2)).delay()
    chord_result, other = res.results
    p.role(body=chord_result, other=other)
    return {
        "chord_by_id": p.outcome(wait_get(by_id(chord_result))),
        "group_no_propagate": p.outcome(wait_get(res, propagate=False)),
        "group": p.outcome(wait_get(res)),
        "body_ran": p.entries("ran", token),
    }


@scenario
def revoked_header_task(p: Probe) -> dict[str, Any]:
    """A header task revoked while it waits (a 3 s countdown) fails the chord as a failure
    would (Celery: ``mark_as_revoked`` goes through ``on_chord_part_return``)."""
    token, waiting = p.token(), identity.si(5).set(countdown=3)
    p.role(revoked=waiting.freeze())
    res = chord([identity.si(1), waiting], record.s(token)).delay()
    p.role(body=res)
    AsyncResult(waiting.id, app=proj.app).revoke()
    return {
        "by_id": p.outcome(lambda: by_id(res).get(timeout=WAIT + 5)),
        "revoked_state": AsyncResult(waiting.id, app=proj.app).state,
        "body_ran": p.entries("ran", token),
    }


# -- 2. errbacks, every shape -----------------------------------------------------------------
def _errbacks(p: Probe, kinds: dict[str, tuple[str, str, int]]) -> dict[str, Any]:
    """``{label: (ledger kind, token, expected count)}`` -> the lines each errback wrote."""
    return {label: p.entries(kind, token, n) for label, (kind, token, n) in kinds.items()}


@scenario
def task_errbacks_of_every_style(p: Probe) -> dict[str, Any]:
    t = [p.token() for _ in range(6)]
    errbacks = [
        mark.si(t[0]),  # immutable, one argument: sent as a task, with no argument
        mark_here.si(t[1]),  # immutable, two arguments: called in the worker, with none
        errback_with_id.s(token=t[2]),  # (task_id): sent as a task with the failed id
        errback_with_request.s(token=t[3]),  # (request, exc, traceback): called in the worker
        errback_bound.s(token=t[4]),  # bind=True: sent as a task with the failed id
    ]
    res = fail.apply_async(("t",), link_error=errbacks)
    p.role(fail=res)
    on_error = fail.si("o").on_error(errback_with_id.s(token=t[5])).delay()
    p.role(other=on_error)
    return {
        "get": p.outcome(wait_get(res)),
        **_errbacks(
            p,
            {
                "si_one_arg": ("mark", t[0], 1),
                "si_two_args": ("mark", t[1], 1),
                "with_id": ("id", t[2], 1),
                "with_request": ("request", t[3], 1),
                "bound": ("bound", t[4], 1),
                "on_error": ("id", t[5], 1),
            },
        ),
    }


@scenario
def chain_errbacks(p: Probe) -> dict[str, Any]:
    """Errbacks linked to a chain (``link_error``), or given to its ``apply_async``: each is
    called once, for the task that failed (Celery links them to every task of the chain).
    Given both ways, Celery uses only those of ``apply_async`` (its options replace the
    chain's own)."""
    t = [p.token() for _ in range(4)]
    failing, other = fail.s(), fail.s()
    p.role(fail=failing.freeze(), other=other.freeze())
    flow = chain(identity.si(1), failing, identity.si(2))
    flow.link_error(errback_with_id.s(token=t[0]))
    flow.link_error(errback_with_request.s(token=t[1]))
    flow.link_error(mark.si(t[2]))
    res = flow.delay()
    p.role(last=res)
    given = chain(identity.si(1), other, identity.si(2)).apply_async(link_error=errback_with_id.s(token=t[3]))
    return {
        "get": p.outcome(wait_get(res)),
        "last_by_id": p.outcome(wait_get(by_id(res))),
        **_errbacks(
            p,
            {
                "with_id": ("id", t[0], 1),
                "with_request": ("request", t[1], 1),
                "si": ("mark", t[2], 1),
                "apply_async_link_error": ("id", t[3], 1),
            },
        ),
        "given_get": p.outcome(wait_get(given)),
    }


@scenario
def chain_children_errbacks(p: Probe) -> dict[str, Any]:
    """Each task of a chain carries its own errback; only the first fails (the others never
    run), so only its errback is called."""
    token = p.token()
    children = [fail.si(i) for i in range(3)]
    for child in children:
        child.link_error(mark.si(token))
    res = chain(*children).delay()
    return {"get": p.outcome(wait_get(res)), "errbacks": len(p.entries("mark", token, 1))}


@scenario
def group_errback_per_failed_member(p: Probe) -> dict[str, Any]:
    t = [p.token() for _ in range(3)]
    first, second = fail.si("a"), fail.si("b")
    p.role(fail_a=first.freeze(), fail_b=second.freeze())
    members = group(identity.si(1), first, second)
    members.link_error(errback_with_id.s(token=t[0]))
    members.link_error(errback_with_request.s(token=t[1]))
    members.link_error(mark_here.si(t[2]))
    res = members.delay()
    return {
        "no_propagate": p.outcome(wait_get(res, propagate=False)),
        **_errbacks(
            p,
            {"with_id": ("id", t[0], 2), "with_request": ("request", t[1], 2), "si": ("mark", t[2], 2)},
        ),
    }


@scenario
def chord_errbacks_when_the_header_fails(p: Probe) -> dict[str, Any]:
    t = [p.token() for _ in range(4)]
    failing = fail.si("h")
    p.role(fail=failing.freeze())
    flow = chord([identity.si(1), failing], record.s(t[3]))
    flow.link_error(errback_with_id.s(token=t[0]))
    flow.link_error(errback_with_request.s(token=t[1]))
    flow.link_error(mark.si(t[2]))
    res = flow.delay()
    p.role(body=res)
    return {
        "by_id": p.outcome(wait_get(by_id(res))),
        "body_ran": p.entries("ran", t[3]),
        **_errbacks(
            p,
            {"with_id": ("id", t[0], 1), "with_request": ("request", t[1], 1), "si": ("mark", t[2], 1)},
        ),
    }


@scenario
def chord_errbacks_when_the_body_fails(p: Probe) -> dict[str, Any]:
    t = [p.token() for _ in range(3)]
    flow = chord([identity.si(1), identity.si(2)], fail.s())
    flow.link_error(errback_with_id.s(token=t[0]))
    flow.link_error(errback_with_request.s(token=t[1]))
    flow.link_error(mark.si(t[2]))
    res = flow.delay()
    p.role(body=res)
    return {
        "by_id": p.outcome(wait_get(by_id(res))),
        **_errbacks(
            p,
            {"with_id": ("id", t[0], 1), "with_request": ("request", t[1], 1), "si": ("mark", t[2], 1)},
        ),
    }


@scenario
def chord_body_errback(p: Probe) -> dict[str, Any]:
    """An errback on the body only (Celery's documented way: ``tsum.s().on_error(...)``)."""
    t = [p.token() for _ in range(3)]
    failing = fail.si("h")
    p.role(fail=failing.freeze())
    body = record.s(t[2]).on_error(errback_with_id.s(token=t[0]))
    body.link_error(errback_with_request.s(token=t[1]))
    res = chord([failing, identity.si(1)], body).delay()
    p.role(body=res)
    return {
        "by_id": p.outcome(wait_get(by_id(res))),
        "body_ran": p.entries("ran", t[2]),
        **_errbacks(p, {"with_id": ("id", t[0], 1), "with_request": ("request", t[1], 1)}),
    }


def _with_header_errbacks(enabled: bool, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``build`` with ``task_allow_error_cb_on_chord_header`` set to ``enabled``; Celery
    reads it where the canvas is built and sent."""
    before = proj.app.conf.task_allow_error_cb_on_chord_header
    proj.app.conf.task_allow_error_cb_on_chord_header = enabled
    try:
        return build()
    finally:
        proj.app.conf.task_allow_error_cb_on_chord_header = before


@scenario
def header_errbacks_with_the_setting(p: Probe) -> dict[str, Any]:
    """``task_allow_error_cb_on_chord_header=True``: a chord's errback is linked to every header
    task and to the body: called for each failed header task and for the body."""

    def build() -> dict[str, Any]:
        t = [p.token() for _ in range(5)]
        flow = chord([fail.si(1), identity.si(2), fail.si(3)], record.si("body", t[1]))
        flow.link_error(mark_here.si(t[0]))
        res = flow.delay()
        upgraded = chain(group(fail.si(4), fail.si(5), identity.si(6)), record.si("body", t[3]))
        upgraded.link_error(mark_here.si(t[2]))
        upgraded_res = upgraded.delay()
        split = chord([fail.si(7), identity.si(8)], record.si("body", t[4]))
        for task in split.tasks:
            task.link_error(mark.si(f"{t[4]}-header"))
        split.body.link_error(mark.si(f"{t[4]}-body"))
        split_res = split.delay()
        return {
            "by_id": p.outcome(wait_get(by_id(res))),
            "errbacks": p.count("mark", t[0], 3),
            "body_ran": p.entries("ran", t[1]),
            "upgraded_by_id": p.outcome(wait_get(by_id(upgraded_res))),
            "upgraded_errbacks": p.count("mark", t[2], 3),
            "upgraded_body_ran": p.entries("ran", t[3]),
            "split_by_id": p.outcome(wait_get(by_id(split_res))),
            "split_header_errbacks": p.count("mark", f"{t[4]}-header", 1),
            "split_body_errbacks": p.count("mark", f"{t[4]}-body", 1),
            "split_body_ran": p.entries("ran", t[4]),
        }

    return _with_header_errbacks(True, build)


@scenario
def header_errbacks_without_the_setting(p: Probe) -> dict[str, Any]:
    """The default: a chord's errback is called once (for the body), however many header
    tasks fail."""

    def build() -> dict[str, Any]:
        t = [p.token() for _ in range(2)]
        flow = chord([fail.si(1), identity.si(2), fail.si(3)], record.si("body", t[1]))
        flow.link_error(mark_here.si(t[0]))
        res = flow.delay()
        return {
            "by_id": p.outcome(wait_get(by_id(res))),
            "errbacks": p.count("mark", t[0], 1),
            "body_ran": p.entries("ran", t[1]),
        }

    return _with_header_errbacks(False, build)


@scenario
def nested_chord_header_errback_once(p: Probe) -> dict[str, Any]:
    def build() -> dict[str, Any]:
        t = [p.token() for _ in range(2)]
        inner = chord([identity.si("t1"), fail.si()], identity.si("inner body"))
        outer = chord(group([identity.si("t3"), inner]), record.si("body", t[1]))
        outer.link_error(mark_here.si(t[0]))
        res = outer.delay()
        return {
            "by_id": p.outcome(wait_get(by_id(res))),
            "errbacks": p.count("mark", t[0], 1),
            "body_ran": p.entries("ran", t[1]),
        }

    return _with_header_errbacks(False, build)


@scenario
def replaced_by_a_chain_with_its_own_errback(p: Probe) -> dict[str, Any]:
    """A task (and a chain) with an errback, replaced by a chain carrying its own: both are
    called, once each; also when the chain's errback is one its worker calls (``mark_here``
    takes ``request, exc, traceback``)."""
    t = [p.token() for _ in range(3)]
    alone = replaced_by_failing_chain.apply_async((t[0],), link_error=mark.si(f"{t[0]}-outer"))
    flow = chain(identity.si(1), replaced_by_failing_chain.si(t[1]), identity.si(2))
    flow.link_error(mark.si(f"{t[1]}-outer"))
    in_chain = flow.delay()
    here = chain(identity.si(1), replaced_by_failing_chain.si(t[2]), identity.si(2))
    here.link_error(mark_here.si(f"{t[2]}-outer"))
    in_worker = here.delay()
    return {
        "alone": p.outcome(wait_get(alone)),
        "alone_inner": p.count("mark", f"{t[0]}-inner", 1),
        "alone_outer": p.count("mark", f"{t[0]}-outer", 1),
        "in_chain": p.outcome(wait_get(in_chain)),
        "in_chain_inner": p.count("mark", f"{t[1]}-inner", 1),
        "in_chain_outer": p.count("mark", f"{t[1]}-outer", 1),
        "in_worker": p.outcome(wait_get(in_worker)),
        "in_worker_inner": p.count("mark", f"{t[2]}-inner", 1),
        "in_worker_outer": p.count("mark", f"{t[2]}-outer", 1),
    }

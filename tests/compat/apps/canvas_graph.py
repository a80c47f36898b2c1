"""Issue 29, entries 3 to 6: the ids that tie a workflow together (``parent_id``, ``root_id``,
``AsyncResult.parent``, ``children``), results that round-trip (``GroupResult.save`` /
``restore``, ``as_tuple`` / ``result_from_tuple``, a group's result as an argument, signatures
rebuilt from JSON), the rest of the task semantics (``ignore_result``, ``expires``, ``chord |
signature``, ``chain | chord``, ``add_to_chord``, group partials, nested tails) and a revoke
that comes before its task. See canvas_probe.py for how scenarios observe."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from celery import chain, chord, group, signature
from celery.result import AsyncResult, GroupResult, result_from_tuple

from tests.compat.apps import canvas_errors_app as proj
from tests.compat.apps.canvas_errors_app import (
    add,
    add_to_my_chord,
    chain_with_a_group,
    collect_ids,
    errback_bound,
    fail,
    group_place,
    identity,
    ids,
    loud,
    member_ids,
    quiet,
    tsum,
)
from tests.compat.apps.canvas_probe import WAIT, Probe, by_id, scenario, wait_get


# -- 3. ids that tie the graph ----------------------------------------------------------------
def _ids(p: Probe, res: Any) -> Any:
    return p.named(res.get(timeout=WAIT))


@scenario
def chain_ids(p: Probe) -> dict[str, Any]:
    a, b, c = ids.si("a"), ids.si("b"), ids.si("c")
    p.role(a=a.freeze(), b=b.freeze(), c=c.freeze())
    res = chain(a, b, c).delay()
    return {
        "c": _ids(p, res),
        "b": _ids(p, res.parent),
        "a": _ids(p, res.parent.parent),
        "parents": [p.named(res.parent.id), p.named(res.parent.parent.id), res.parent.parent.parent],
        "children_of_a": sorted(p.named(r.id) for r in (AsyncResult(a.id, app=proj.app).children or [])),
    }


@scenario
def group_in_a_chain_ids(p: Probe) -> dict[str, Any]:
    one, two = ids.si(1), ids.si(2)
    p.role(one=one.freeze(), two=two.freeze())
    res = (one | two | group(ids.si(i) for i in range(3, 6))).delay()
    p.role(group=res)
    return {
        "members": p.named(res.get(timeout=WAIT)),
        "group_parent": p.named(res.parent.id),
        "children_of_two": sorted(p.named(r.id) for r in (AsyncResult(two.id, app=proj.app).children or [])),
    }


def _one_of(p: Probe, value: dict[str, Any], field: str, *candidates: Any) -> None:
    """A chord body's parent is whichever header task finished last (Celery's test says "one
    of the header tasks"): the field reads ``<one of the header>`` when it is one of them."""
    if value.get(field) in {p.named(str(getattr(c, "id", c))) for c in candidates}:
        value[field] = "<one of the header>"


@scenario
def chord_ids(p: Probe) -> dict[str, Any]:
    one, two, body, last = ids.si(1), ids.si(2), collect_ids.s(5), ids.si(6)
    members = [ids.si(3), ids.si(4)]
    p.role(one=one.freeze(), two=two.freeze(), body=body.freeze(), last=last.freeze())
    p.role(h3=members[0].freeze(), h4=members[1].freeze())
    res = chain(one, two, chord(group(members), chain(body, last))).delay()
    body_value = p.named(AsyncResult(body.id, app=proj.app).get(timeout=WAIT))
    header = body_value.pop("previous")
    _one_of(p, body_value, "parent_id", *members)
    return {
        "last": _ids(p, res),
        "body": body_value,
        "header": header,
        "shape": [type(r).__name__ for r in (res.parent, res.parent.parent, res.parent.parent.parent)],
    }


@scenario
def standalone_chord_ids(p: Probe) -> dict[str, Any]:
    """A chord sent alone: Celery gives each header task its own root, and the body the root
    of the header task that started it."""
    members = [ids.si(1), ids.si(2)]
    body = collect_ids.s("body")
    p.role(h1=members[0].freeze(), h2=members[1].freeze(), body=body.freeze())
    value = p.named(chord(members, body).delay().get(timeout=WAIT))
    header = value.pop("previous")
    started_by = value["parent_id"]
    _one_of(p, value, "parent_id", *members)
    value["root_id"] = "<its parent>" if value["root_id"] == started_by else value["root_id"]
    return {"body": value, "header": header}


@scenario
def nested_chord_ids(p: Probe) -> dict[str, Any]:
    first, inner_body, outer_body = ids.si("first"), collect_ids.s("inner"), collect_ids.s("outer")
    x1, x2, y = ids.si("x1"), ids.si("x2"), ids.si("y")
    p.role(first=first.freeze(), inner_body=inner_body.freeze(), outer_body=outer_body.freeze())
    p.role(x1=x1.freeze(), x2=x2.freeze(), y=y.freeze())
    inner = chord([x1, x2], inner_body)
    res = chain(first, chord([inner, y], outer_body)).delay()
    value = p.named(res.get(timeout=WAIT))
    inner_value, y_value = value.pop("previous")
    inner_header = inner_value.pop("previous")
    _one_of(p, value, "parent_id", inner_body, y)
    _one_of(p, inner_value, "parent_id", x1, x2)
    return {"outer_body": value, "inner_body": inner_value, "inner_header": inner_header, "y": y_value}


@scenario
def group_places(p: Probe) -> dict[str, Any]:
    """``self.request.group``/``group_index``: a group member's (of a chain member, its last
    task's) and a chord header task's; a task outside any group has none. ``request.chord``
    is the body's signature in a chord header task (its id, here), else None."""
    first = group_place.si("first")
    first.freeze()
    res = group(group_place.si(0), chain(first, group_place.si(1)), group_place.si(2)).delay()
    p.role(group=res)
    sent = chord([group_place.si(0), group_place.si(1)], identity.s()).delay()
    p.role(chord_body=sent)
    header = sent.get(timeout=WAIT)
    header_groups = {h.pop("group") for h in header}
    return {
        "group": p.named(res.get(timeout=WAIT)),
        "first_of_a_chain_member": AsyncResult(first.id, app=proj.app).get(timeout=WAIT),
        "chord_header": p.named(header),
        "one_header_group": len(header_groups) == 1 and None not in header_groups,
    }


@scenario
def callback_and_errback_ids(p: Probe) -> dict[str, Any]:
    token = p.token()
    sent = add.apply_async((1, 1), link=ids.s())
    p.role(add=sent)
    failing = fail.apply_async(("x",), link_error=errback_bound.s(token=token))
    p.role(fail=failing)
    deadline = time.monotonic() + WAIT
    while not sent.children and time.monotonic() < deadline:
        time.sleep(0.02)
    (callback,) = AsyncResult(sent.id, app=proj.app).children or [None]
    return {
        "callback": p.named(callback.get(timeout=WAIT)) if callback is not None else None,
        "errback": p.entries("bound", token, 1),
    }


# -- 4. results that round-trip ---------------------------------------------------------------
@scenario
def group_result_save_and_restore(p: Probe) -> dict[str, Any]:
    sent = group(add.s(i, i) for i in range(3)).delay()
    sent.get(timeout=WAIT)
    sent.save()
    restored = GroupResult.restore(sent.id, app=proj.app)
    uncached = proj.app.backend.restore_group(sent.id, cache=False)
    by_hand = GroupResult(str(uuid.uuid4()), [add.delay(5, 5), add.delay(6, 6)], app=proj.app)
    by_hand.save()
    by_hand_restored = GroupResult.restore(by_hand.id, app=proj.app)
    empty = group([]).delay()
    empty.save()
    empty_restored = GroupResult.restore(empty.id, app=proj.app)
    by_hand.delete()
    return {
        "restored": [r.id for r in restored.results] == [r.id for r in sent.results],
        "restored_values": restored.get(timeout=WAIT),
        "uncached": [r.id for r in uncached.results] == [r.id for r in sent.results],
        "by_hand": by_hand_restored.get(timeout=WAIT),
        "empty": empty_restored.results,
        "deleted": GroupResult.restore(by_hand.id, app=proj.app),
        "unknown": GroupResult.restore(str(uuid.uuid4()), app=proj.app),
    }


def _shape(result: Any, p: Probe) -> Any:
    """A result and its parents as (type, role) pairs, members of groups nested."""
    node: Any = result
    shape = []
    while node is not None:
        entry = [type(node).__name__, p.named(node.id)]
        if isinstance(node, GroupResult):
            entry.append([p.named(r.id) for r in node.results])
        shape.append(entry)
        node = node.parent
    return shape


@scenario
def results_as_tuples(p: Probe) -> dict[str, Any]:
    fanned = (add.s(1, 1) | group(add.s(1), add.s(2))).delay()
    fanned.get(timeout=WAIT)
    p.role(first=fanned.parent, fan=fanned, m1=fanned.results[0], m2=fanned.results[1])
    joined = (add.s(1, 1) | group(add.s(1), add.s(2)) | tsum.s()).delay()
    p.role(joined=joined, header=joined.parent, start=joined.parent.parent)
    p.role(h1=joined.parent.results[0], h2=joined.parent.results[1])
    nested = group(add.s(1, 1), group(add.s(2, 2), add.s(3, 3))).delay()
    return {
        "fanned": _shape(result_from_tuple(json.loads(json.dumps(fanned.as_tuple())), app=proj.app), p),
        "joined": _shape(result_from_tuple(json.loads(json.dumps(joined.as_tuple())), app=proj.app), p),
        "joined_value": result_from_tuple(joined.as_tuple(), app=proj.app).get(timeout=WAIT),
        "nested_members": len(result_from_tuple(nested.as_tuple(), app=proj.app).results),
        "nested_value": result_from_tuple(nested.as_tuple(), app=proj.app).get(timeout=WAIT),
    }


@scenario
def group_result_as_an_argument(p: Probe) -> dict[str, Any]:
    sent = group(add.s(1, 1), add.s(2, 2)).delay()
    ids_seen = member_ids.delay(sent.as_tuple()).get(timeout=WAIT)
    returned = chain_with_a_group.delay().get(timeout=WAIT)
    rebuilt = result_from_tuple(returned, app=proj.app)
    return {
        "member_ids": ids_seen == [r.id for r in sent.results],
        "returned_shape": [len(returned), isinstance(returned[0][1], list)],
        "returned_value": rebuilt.get(timeout=WAIT),
        "returned_parent": type(rebuilt.parent).__name__,
    }


# -- 5. the rest of the task semantics --------------------------------------------------------
@scenario
def ignore_result(p: Probe) -> dict[str, Any]:
    t = [p.token() for _ in range(2)]
    by_task = quiet.delay(t[0])
    by_call = loud.apply_async((t[1],), ignore_result=True)
    ran = [p.count("quiet", t[0], 1), p.count("loud", t[1], 1)]
    return {
        "ran": ran,
        "get": [by_task.get(timeout=WAIT), by_call.get(timeout=WAIT)],
        "ignored": [by_task.ignored, by_call.ignored],
        "state_by_id": [by_id(by_task).state, by_id(by_call).state],
        "result_by_id": [by_id(by_task).result, by_id(by_call).result],
    }


@scenario
def expires_while_waiting(p: Probe) -> dict[str, Any]:
    import datetime as dt

    t = [p.token() for _ in range(2)]
    seconds = loud.apply_async((t[0],), countdown=2, expires=1)
    at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    moment = loud.apply_async((t[1],), countdown=2, expires=at)
    return {
        "get": [p.outcome(wait_get(seconds)), p.outcome(wait_get(moment))],
        "state": [seconds.state, moment.state],
        "ready": [seconds.ready(), moment.ready()],
        "failed": [seconds.failed(), moment.failed()],
        "ran": [p.entries("loud", t[0]), p.entries("loud", t[1])],
    }


def _kind(sig: Any) -> str:
    """chain, group, chord or signature, by the task name Celery gives each workflow type (a
    composed chain is Celery's ``_chain``, not its ``chain`` subclass)."""
    name = str(sig["task"])
    return name.split(".", 1)[1] if name in ("celery.chain", "celery.group", "celery.chord") else "signature"


@scenario
def chord_or_signature(p: Probe) -> dict[str, Any]:
    chord_then = chord([add.s(1, 1), add.s(2, 2)], tsum.s()) | add.s(10)
    chain_then = (add.s(1, 1) | add.s(1)) | chord([add.s(1), add.s(2)], tsum.s())
    first = chord_then.delay()
    second = chain_then.delay()
    return {
        "chord_or_sig": [_kind(chord_then), first.get(timeout=WAIT)],
        "chord_or_sig_parent": first.parent.get(timeout=WAIT),
        "chain_or_chord": [_kind(chain_then), second.get(timeout=WAIT)],
        "chain_or_chord_header": second.parent.get(timeout=WAIT),
    }


@scenario
def add_to_chord(p: Probe) -> dict[str, Any]:
    res = (group([add_to_my_chord.s([1, 2, 3], 4)]) | identity.s()).delay()
    return {"values": sorted(res.get(timeout=WAIT))}


@scenario
def group_partials(p: Probe) -> dict[str, Any]:
    plain = group(add.s(i) for i in range(3)).apply_async(args=(10,), kwargs={"z": 1})
    header = (group(add.s(i) for i in range(4)) | tsum.s()).apply_async(args=(4,), kwargs={"z": 1})
    first_only = (add.s(2, 2) | group(add.s(i) for i in range(4)) | tsum.s()).apply_async(kwargs={"z": 1})
    return {
        "group": plain.get(timeout=WAIT),
        "chord_header": header.get(timeout=WAIT),
        "chain_first_task": first_only.get(timeout=WAIT),
    }


@scenario
def nested_tails(p: Probe) -> dict[str, Any]:
    tail = chord(group(chain(identity.s(42), group(identity.s(), identity.s()))), identity.s()).delay()
    mid = chain(
        add.si(1, 0),
        group(add.si(1, 100), chain(add.si(1, 200), group(add.si(1, 1000), add.si(1, 2000)))),
        add.si(1, 10),
    ).delay()
    counted = group(chord((chain((identity.si(7),) * 3),), identity.s())).delay()
    return {
        "chord_group_chain_group": tail.get(timeout=WAIT),
        "chain_group_chain_group": mid.get(timeout=WAIT),
        "group_chord_chain": counted.get(timeout=WAIT),
    }


@scenario
def signatures_rebuilt_from_json(p: Probe) -> dict[str, Any]:
    shapes = {
        "chain_chord": chain(chord([add.s(1, 1)], tsum.s()), add.s(1)),
        "group_chord": group(chord([add.s(1, 1)], tsum.s()), add.s(2, 2)),
        "chord_chord": chord([chord([add.s(1, 1)], tsum.s())], tsum.s()),
        "chord_group": chord(group([add.s(1, 1), add.s(2, 2)]), tsum.s()),
    }

    def kinds(sig: Any) -> Any:
        sig = signature(sig, app=proj.app)
        if isinstance(sig, chord):
            header = sig.tasks.tasks if isinstance(sig.tasks, group) else sig.tasks
            return ["chord", [kinds(t) for t in header], kinds(sig.body)]
        if isinstance(sig, (chain, group)):
            return [_kind(sig), [kinds(t) for t in sig.tasks]]
        return sig.name.rsplit(".", 1)[-1]

    return {name: kinds(json.loads(json.dumps(sig))) == kinds(sig) for name, sig in shapes.items()}


# -- 6. a revoke that comes before the task ---------------------------------------------------
@scenario
def revoke_before_send(p: Probe) -> dict[str, Any]:
    token, task_id = p.token(), str(uuid.uuid4())
    proj.app.control.revoke(task_id)
    res = loud.apply_async((token,), task_id=task_id)
    return {
        "get": p.outcome(wait_get(res)),
        "state": res.state,
        "ran": p.entries("loud", token),
    }

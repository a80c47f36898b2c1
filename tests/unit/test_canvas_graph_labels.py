"""The canvas graph's boxes name each task by the end of its id: ids drawn together share
their first digits (the millisecond they were drawn), so their starts would all read alike."""

from __future__ import annotations

import itertools
import re

from pgtasks.dashboard.canvas_graph import CanvasGraph, Node, graph_svg
from pgtasks.engine.ids import new_task_ids
from pgtasks.sysdb.records import TaskLinkInfo


def test_tasks_of_one_canvas_get_distinct_short_ids() -> None:
    ids = new_task_ids(4)  # a chain planned at once: one millisecond, one prefix
    nodes = {task_id: Node(task_id, "proj.add", "SUCCESS") for task_id in ids}
    links = [TaskLinkInfo(a, b, "chain", 0, True) for a, b in itertools.pairwise(ids)]
    svg = str(graph_svg(CanvasGraph(ids[0], nodes, links, False)))
    shown = re.findall(r"SUCCESS · ([^<]+)</text>", svg)
    assert shown == ["…" + task_id[-13:] for task_id in ids]
    assert len(set(shown)) == 4


def test_a_short_id_is_shown_whole() -> None:
    nodes = {
        "cv-h1": Node("cv-h1", "proj.add", "SUCCESS"),
        "cv-body": Node("cv-body", "proj.tsum", "PENDING"),
    }
    links = [TaskLinkInfo("cv-h1", "cv-body", "chord", 0, False)]
    svg = str(graph_svg(CanvasGraph("cv-body", nodes, links, False)))
    assert "SUCCESS · cv-h1</text>" in svg and "PENDING · cv-body</text>" in svg

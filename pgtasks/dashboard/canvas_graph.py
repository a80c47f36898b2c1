"""The canvas graph around a task (chains, groups, chords, errbacks and the tasks a body
sent), read link by link through the management API and drawn as an inline SVG on the
server: one column per depth, an arrow per link labelled with its kind, the task itself
highlighted. Every string put into the SVG is escaped."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from urllib.parse import quote

from markupsafe import Markup, escape

from pgtasks.management import TaskManagement
from pgtasks.sysdb.records import TaskLinkInfo

MAX_NODES = 40  # a graph bigger than this is cut (the page says so)
BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 200, 44, 70, 14, 10


@dataclass(frozen=True, slots=True)
class Node:
    """A task of the graph (or a group id that is no task: ``status`` None)."""

    node_id: str
    name: str
    status: str | None


@dataclass(frozen=True, slots=True)
class CanvasGraph:
    """The tasks linked to ``center`` (directly or through others), the links between them,
    and whether the walk stopped at :data:`MAX_NODES`."""

    center: str
    nodes: dict[str, Node]
    links: list[TaskLinkInfo]
    truncated: bool


def graph_around(manager: TaskManagement, task_id: str) -> CanvasGraph:
    """Walk the links from ``task_id`` both ways, breadth first, up to :data:`MAX_NODES` tasks."""
    seen: dict[str, Node] = {}
    links: dict[tuple[str, str, str], TaskLinkInfo] = {}
    todo = deque([task_id])
    truncated = False
    while todo:
        node_id = todo.popleft()
        if node_id in seen:
            continue
        if len(seen) >= MAX_NODES:
            truncated = True
            break
        record = manager.get_task(node_id, steps=False)
        seen[node_id] = Node(
            node_id, record.name if record else "group", record.status.value if record else None
        )
        for link in manager.task_links(node_id):
            links[(link.parent_id, link.child_id, link.kind)] = link
            for other in (link.parent_id, link.child_id):
                if other not in seen:
                    todo.append(other)
    kept = [link for link in links.values() if link.parent_id in seen and link.child_id in seen]
    return CanvasGraph(task_id, seen, kept, truncated)


def _depths(graph: CanvasGraph) -> dict[str, int]:
    """Each node's column: the longest run of links leading to it (bounded: no cycles loop)."""
    depth = dict.fromkeys(graph.nodes, 0)
    for _ in range(len(graph.nodes)):
        changed = False
        for link in graph.links:
            if depth[link.child_id] < depth[link.parent_id] + 1:
                depth[link.child_id] = depth[link.parent_id] + 1
                changed = True
        if not changed:
            break
    return depth


def graph_svg(graph: CanvasGraph) -> Markup:
    """The graph as an inline SVG (empty when the task is linked to nothing)."""
    if not graph.links:
        return Markup("")
    depth = _depths(graph)
    columns: dict[int, list[str]] = {}
    for node_id in graph.nodes:
        columns.setdefault(depth[node_id], []).append(node_id)
    place: dict[str, tuple[int, int]] = {}
    for col, ids in columns.items():
        for row, node_id in enumerate(ids):
            place[node_id] = (PAD + col * (BOX_W + GAP_X), PAD + row * (BOX_H + GAP_Y))
    width = PAD * 2 + (max(columns) + 1) * (BOX_W + GAP_X) - GAP_X
    height = PAD * 2 + max(len(ids) for ids in columns.values()) * (BOX_H + GAP_Y) - GAP_Y
    parts = [
        f'<svg id="canvas-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="canvas graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for link in graph.links:
        (x1, y1), (x2, y2) = place[link.parent_id], place[link.child_id]
        ax, ay, bx, by = x1 + BOX_W, y1 + BOX_H // 2, x2, y2 + BOX_H // 2
        if x2 <= x1:  # same column (should not happen in a DAG): draw below
            ax, ay, bx, by = x1 + BOX_W // 2, y1 + BOX_H, x2 + BOX_W // 2, y2
        dash = "" if link.done else ' stroke-dasharray="4 3"'
        parts.append(
            f'<line class="edge" data-kind="{escape(link.kind)}" x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" '
            f'stroke="#555"{dash} marker-end="url(#arrow)"/>'
            f'<text x="{(ax + bx) // 2}" y="{(ay + by) // 2 - 4}" font-size="11" text-anchor="middle" '
            f'fill="#555">{escape(link.kind)}</text>'
        )
    for node_id, node in graph.nodes.items():
        x, y = place[node_id]
        current = node_id == graph.center
        extra = ' id="graph-current" class="node current"' if current else ' class="node"'
        stroke = 'stroke="#d60" stroke-width="3"' if current else 'stroke="#888" stroke-width="1"'
        label = escape(node.name if len(node.name) <= 28 else node.name[:27] + "…")
        status = escape(node.status or "group id")
        # The end of a long id: task ids drawn together share their first digits (the time).
        short = escape(node_id if len(node_id) <= 14 else "…" + node_id[-13:])
        box = (
            f'<g{extra} data-task="{escape(node_id)}"><title>{escape(node_id)}</title>'
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="5" fill="#fff" {stroke}/>'
            f'<text x="{x + 6}" y="{y + 17}" font-size="12">{label}</text>'
            f'<text x="{x + 6}" y="{y + 35}" font-size="11" fill="#555">{status} · {short}</text></g>'
        )
        parts.append(
            f'<a href="/task/{escape(quote(node_id, safe=""))}">{box}</a>'
            if node.status and not current
            else box
        )
    parts.append("</svg>")
    return Markup("".join(parts))

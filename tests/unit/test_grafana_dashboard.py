"""``docs/grafana-dashboard.json`` parses, and every metric it queries is one that pgtasks
exports: the dashboard's ``/metrics`` (read from a real SQLite database) or a worker's
``--metrics-port``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from pgtasks.dashboard.console import Console
from pgtasks.dashboard.metrics import PgtasksCollector
from pgtasks.worker.metrics import WorkerMetrics
from tests.support.apps import opened_app

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def _series(text: str) -> set[str]:
    """The series names a scrape of ``text`` can hold, samples or not (a labelled counter
    has no sample until first counted)."""
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def _exported(tmp_path: Path) -> set[str]:
    with opened_app("grafana", f"sqlite:///{tmp_path}/db.sqlite3") as app:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(PgtasksCollector(Console(app)))
        board = generate_latest(registry).decode()
    worker = WorkerMetrics(lambda: 0, 4).scrape().decode()
    return _series(board) | _series(worker)


def _expressions(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k in ("expr", "definition") and isinstance(v, str)]
        query = node.get("query")
        if isinstance(query, dict) and isinstance(query.get("query"), str):
            found.append(query["query"])
        return found + [e for v in node.values() for e in _expressions(v)]
    if isinstance(node, list):
        return [e for v in node for e in _expressions(v)]
    return []


def test_grafana_dashboard_queries_only_exported_metrics(tmp_path: Path) -> None:
    board = json.loads(DASHBOARD.read_text())
    expressions = _expressions(board)
    assert len(expressions) >= 15, expressions
    queried = {name for expr in expressions for name in re.findall(r"pgtasks_[a-z_]+", expr)}
    exported = _exported(tmp_path)
    assert queried - exported == set(), f"queried but not exported: {sorted(queried - exported)}"
    # What the dashboard promises to show is there: the figures named in docs/dashboard.md.
    for wanted in (
        "pgtasks_tasks",
        "pgtasks_tasks_started_total",
        "pgtasks_tasks_failed_total",
        "pgtasks_task_enqueue_to_start_seconds_bucket",
        "pgtasks_task_runtime_seconds_bucket",
        "pgtasks_workers_online",
        "pgtasks_schedule_lag_seconds",
        "pgtasks_oldest_waiting_seconds",
    ):
        assert wanted in queried, wanted
    quantiles = [e for e in expressions if e.startswith("histogram_quantile(")]
    assert {e.split(",")[0] for e in quantiles} == {"histogram_quantile(0.5", "histogram_quantile(0.95"}


def test_exported_names_follow_the_worker_and_dashboard_metrics(tmp_path: Path) -> None:
    exported = _exported(tmp_path)
    assert {
        "pgtasks_tasks_succeeded_total",
        "pgtasks_tasks_retried_total",
        "pgtasks_worker_running_tasks",
        "pgtasks_worker_pool_size",
        "pgtasks_queue_paused",
    } <= exported
    assert "pgtasks_not_a_metric" not in exported
    assert all(name.startswith("pgtasks_") for name in exported)

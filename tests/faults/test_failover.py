"""Failover onto a promoted synchronous standby after 30 s without a primary (issue 18), with a
producer and two workers running through a multi-host URL: see tests/faults/failover.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.faults import failover


def test_thirty_seconds_without_a_primary_then_a_promotion(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    report = failover.run(synchronous=True, outage=30.0, folder=tmp_path)
    record_property("report", report.summary())  # printed at the end of every run (conftest.py)
    assert report.acknowledged >= 100, report.summary()
    assert report.lost == [] and report.wrong_results == [], report.summary()
    assert report.completed == report.acknowledged and report.duplicated == 0, report.summary()
    assert report.producer_errors == 0, report.summary()  # it waited: 60 s reconnect deadline
    assert report.longest_enqueue >= 30.0, report.summary()  # ... through the outage
    assert report.steps_more == 0, report.summary()
    assert report.workers_exited == [], report.summary()
    assert report.recovered_by_others == 0, report.summary()
    assert report.first_completion_after_promotion is not None, report.summary()

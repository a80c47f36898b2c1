"""A short soak (``make soak`` runs the long one): random faults against three workers while
a producer enqueues, then the invariant check. See :mod:`tests.faults.soak`."""

from __future__ import annotations

from pathlib import Path

from tests.faults.soak import KINDS, SoakOptions, run_soak


def test_a_short_soak_loses_nothing(tmp_path: Path) -> None:
    options = SoakOptions(seconds=35, seed=7, workers=3, rate=12, pause=(1.0, 2.5))
    result = run_soak(options, tmp_path, fsync=False)
    summary = result.summary()
    assert result.ok, summary
    assert {f.kind for f in result.faults} >= set(KINDS), summary  # every kind of fault, at least once
    assert result.report.acknowledged >= 150, summary
    assert result.report.statuses == {"SUCCESS": result.report.acknowledged}, summary
    assert result.report.faulted > 0, summary  # the faults hit running tasks
    # The schedule fired throughout the faults (check_fires: its cursor caught up with their
    # end); half the window is left for the beat process's start on a loaded machine.
    assert result.fires.expected >= options.seconds // 2 and not result.fires.problems, summary

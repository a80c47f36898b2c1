"""The sustained-load run (`make sustained`) scaled down to a minute: a steady mix
of no-op, three-step, delayed and retried tasks with retention on. Every task sent finishes
exactly once, no step runs twice, and the task table holds only what finished within the
retention age (pruning keeps up). The hour-long run's figures are in docs/performance.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.processes import REPO

RATE, EXPIRES, PRUNE_EVERY, SAMPLE = 300, 20, 5, 10


def test_a_steady_load_with_retention_loses_nothing_and_stays_bounded(
    pg_server_url: str, tmp_path: Path
) -> None:
    report = tmp_path / "sustained.md"
    argv = [sys.executable, "-m", "loadtest.sustained", "--minutes", "1", "--rate", str(RATE)]
    argv += ["--result-expires", str(EXPIRES), "--prune-interval", str(PRUNE_EVERY), "--sample", str(SAMPLE)]
    argv += ["--workers", "2", "--concurrency", "8", "--out", str(report)]
    env = {**os.environ, "PGTASKS_DATABASE_URL": pg_server_url}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    text = report.read_text()
    sent = int(re.search(r"^sent ([\d,]+) tasks", text, re.MULTILINE).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert sent >= RATE * 40  # the producer kept its pace for most of the run
    assert "nothing lost, nothing ran twice" in text
    rows = [line.split("|") for line in text.splitlines() if re.match(r"^\|\s+[\d.]+ \|", line)]
    assert len(rows) >= 5
    task_rows = [int(cells[5].replace(",", "")) for cells in rows]
    # Without retention the table would hold every task sent so far (18,000 at the end); with
    # it, about what finished within the age and a prune interval (7,500 here).
    bound = RATE * (EXPIRES + PRUNE_EVERY) * 1.5
    assert max(task_rows[2:]) < bound, task_rows

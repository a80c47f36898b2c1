"""A few seconds of the load test, so that `make loadtest` cannot rot: the driver runs locust,
workers and the drain against the suite's PostgreSQL and its invariant check passes, with
and without a worker killed half-way."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO


def run_loadtest(server_url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "loadtest.run", "--workers", "2", "--time", "4", "--users", "4"]
    argv += ["--concurrency", "4", "--out", str(out), *extra]
    env = {**os.environ, "PGTASKS_DATABASE_URL": server_url}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def figure(output: str, label: str) -> int:
    found = re.search(rf"^{re.escape(label)}\s+([\d,]+)", output, re.MULTILINE)
    assert found, output
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("fault", ["none", "kill"])
def test_a_short_load_test_passes_its_invariant_check(pg_server_url: str, tmp_path: Path, fault: str) -> None:
    done = run_loadtest(pg_server_url, tmp_path, "--fault", fault)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "invariant check" in out and "PASSED" in out.split("invariant check", 1)[1].splitlines()[0]
    enqueued = figure(out, "tasks enqueued (acknowledged)")
    assert enqueued > 0 and figure(out, "tasks completed") >= enqueued
    assert figure(out, "enqueue requests / failures") > 0
    assert (tmp_path / "pgtasks" / "locust.html").stat().st_size > 0
    if fault == "kill":
        assert "fault: kill -9 worker pid" in out
    else:
        assert figure(out, "step bodies run twice") == 0

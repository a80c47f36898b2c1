"""Tasks that do to the worker's process what a task should not: close its standard streams,
fork and let the child return, outstay the shutdown grace period."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import warnings

from pgtasks import App

app = App("hostile", poll_interval=0.05)


@app.task(name="hostile.closes")
def closes(stream: str) -> str:
    getattr(sys, stream).close()
    return stream


@app.task(name="hostile.speaks")
def speaks(word: str) -> str:
    print(f"{word} on stdout")
    print(f"{word} on stderr", file=sys.stderr)
    warnings.warn(f"{word} as a warning", stacklevel=1)
    logging.getLogger("hostile").warning("%s logged", word)
    return word


def _fork(child_does: str) -> list[object]:
    child = os.fork()
    if child == 0:
        if child_does == "raise":
            raise ValueError("raised in the forked child")
        if child_does == "exit":
            sys.exit(7)
        return ["child"]
    _, status = os.waitpid(child, 0)
    return ["parent", os.waitstatus_to_exitcode(status)]


@app.step
def forking_step(child_does: str) -> list[object]:
    return _fork(child_does)


@app.task(name="hostile.forks")
def forks(child_does: str, in_step: bool) -> list[object]:
    """Fork; the child returns, raises or calls sys.exit(7) out of the task (or its step)."""
    return forking_step(child_does) if in_step else _fork(child_does)


@app.task(name="hostile.echo")
def echo(value: int) -> list[object]:
    return [value, os.getpid()]


@app.step
def labelled(label: str) -> str:
    return label


@app.task(name="hostile.step_in_child")
def step_in_child() -> list[object]:
    """A child forked by the task (as multiprocessing's fork start method does) runs a step
    and ends properly; the parent then runs the same step."""
    child = os.fork()
    if child == 0:
        code = 3
        try:
            code = 5 if labelled("child") == "child" else 4  # the step returned here
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return [labelled("parent"), os.waitstatus_to_exitcode(status)]


@app.task(name="hostile.outstays")
def outstays(marker: str) -> str:
    """The first run ignores SIGTERM and outlasts any shutdown grace period; the next returns."""
    if os.path.exists(marker):
        return "ran again"
    with open(marker, "w"):
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(120)
    return "outlasted"

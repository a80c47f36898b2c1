"""Two applications run by real ``pgtasks worker`` subprocesses in the secrets tests:
``logged`` logs task arguments (``log_task_args=True``), ``quiet`` keeps the default.

Every task keeps its arguments in local variables when it fails, and ``charge`` also puts its
secret into the exception message, as careless code does."""

from __future__ import annotations

from pgtasks import App

logged = App("seclogged", log_task_args=True, poll_interval=0.05)
quiet = App("secquiet", poll_interval=0.05)


@logged.task(name="secret.login", secret_args=("password", "token"))
def login(user: str, password: str, *, token: str = "") -> str:
    return f"{user} logged in"


@logged.task(name="secret.charge", secret_args=(1,))
def charge(user: str, card: str, amount: int) -> None:
    kept_in_a_local = card
    raise ValueError(f"card {kept_in_a_local} of {user} declined for {amount}")


@quiet.task(name="plain.echo")
def echo(value: str, extra: dict[str, str] | None = None) -> str:
    return "done"


@quiet.task(name="plain.boom")
def boom(value: str) -> None:
    kept_in_a_local = value  # noqa: F841 - a local that a traceback with locals would show
    raise RuntimeError("boom")


@quiet.task(name="plain.charge", secret_args=("card",))
def quiet_charge(card: str) -> None:
    raise KeyError(card)

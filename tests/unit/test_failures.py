"""Exceptions stored as JSON and rebuilt only from trusted, already-imported types."""

from __future__ import annotations

import datetime as dt
import json
import sys

import pytest

from pgtasks.engine.errors import ConfigurationError, NonDeterminismError, RetryRequested, TaskError
from pgtasks.engine.failures import decode_exception, encode_exception, error_summary


class AppError(Exception):
    pass


class TwoArgError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)
        self.code, self.detail = code, detail


class Outer:
    class InnerError(Exception):
        pass


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def record(module: str, type_name: str, message: str = "boom", args: object = None) -> str:
    return json.dumps(
        {"module": module, "type": type_name, "message": message, "args": args, "traceback": "tb"}
    )


def test_encoded_record_fields() -> None:
    data = json.loads(encode_exception(raised(ValueError("bad value", 3))))
    assert data["module"] == "builtins"
    assert data["type"] == "ValueError"
    assert data["message"] == "('bad value', 3)"
    assert data["args"] == ["bad value", 3]
    assert "ValueError" in data["traceback"]
    assert "raise exc" in data["traceback"]


def test_builtin_value_error_rebuilt() -> None:
    exc = decode_exception(encode_exception(raised(ValueError("bad value"))))
    assert type(exc) is ValueError
    assert exc.args == ("bad value",)
    assert "raise exc" in exc.remote_traceback  # type: ignore[attr-defined]


def test_builtin_key_error_rebuilt() -> None:
    exc = decode_exception(encode_exception(raised(KeyError("missing"))))
    assert type(exc) is KeyError
    assert exc.args == ("missing",)
    assert "KeyError" in exc.remote_traceback  # type: ignore[attr-defined]


def test_unserializable_args_fall_back_to_message() -> None:
    text = encode_exception(raised(ValueError(object())))
    assert json.loads(text)["args"] is None
    exc = decode_exception(text)
    assert type(exc) is ValueError
    assert exc.args[0].startswith("<object object")


def test_arguments_json_carries_only_with_tags_are_rebuilt() -> None:
    decoding = raised(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"))
    text = encode_exception(decoding)
    assert json.loads(text)["args"] is None and "tagged_args" in json.loads(text)
    exc = decode_exception(text)
    assert type(exc) is UnicodeDecodeError and exc.args == decoding.args and exc.object == b"\xff"
    when = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rebuilt = decode_exception(encode_exception(raised(AppError(when, b"raw"))), trusted_modules=[__name__])
    assert type(rebuilt) is AppError and rebuilt.args == (when, b"raw")


def test_unreadable_tagged_arguments_fall_back_to_the_message() -> None:
    text = json.dumps({**json.loads(record("builtins", "ValueError", "shown")), "tagged_args": "{not json"})
    exc = decode_exception(text)
    assert type(exc) is ValueError and exc.args == ("shown",)


def test_test_module_class_is_rebuilt_when_trusted() -> None:
    text = encode_exception(raised(AppError("app failed")))
    exc = decode_exception(text, trusted_modules=[__name__])
    assert type(exc) is AppError
    assert exc.args == ("app failed",)
    assert exc.remote_traceback  # type: ignore[attr-defined]


def test_test_module_class_is_task_error_when_not_trusted() -> None:
    assert __name__.startswith("tests.unit.")
    exc = decode_exception(encode_exception(raised(AppError("app failed"))))
    assert type(exc) is TaskError
    assert exc.type_name == f"{__name__}.AppError"
    assert exc.message == "app failed"
    assert "AppError" in exc.remote_traceback
    assert str(exc) == f"{__name__}.AppError: app failed"


def test_two_argument_init_rebuilt_from_args() -> None:
    exc = decode_exception(encode_exception(raised(TwoArgError(404, "gone"))), {__name__})
    assert type(exc) is TwoArgError
    assert (exc.code, exc.detail) == (404, "gone")


def test_nested_class_rebuilt_by_qualname() -> None:
    text = encode_exception(raised(Outer.InnerError("inner")))
    assert json.loads(text)["type"] == "Outer.InnerError"
    exc = decode_exception(text, [__name__])
    assert type(exc) is Outer.InnerError


def test_class_not_constructible_from_record_is_task_error() -> None:
    exc = decode_exception(record(__name__, "TwoArgError", "only one", args=["only one"]), [__name__])
    assert type(exc) is TaskError
    assert exc.type_name == f"{__name__}.TwoArgError"


def test_os_system_is_never_called() -> None:
    for trusted in ((), ("os",)):
        exc = decode_exception(record("os", "system", args=["echo pwned"]), trusted)
        assert type(exc) is TaskError
        assert exc.type_name == "os.system"


def test_unimported_module_is_not_imported() -> None:
    name = "some_unimported_module_xyz"
    assert name not in sys.modules
    exc = decode_exception(record(name, "Boom"), trusted_modules=[name])
    assert type(exc) is TaskError
    assert exc.type_name == f"{name}.Boom"
    assert name not in sys.modules


@pytest.mark.parametrize("type_name", ["SystemExit", "KeyboardInterrupt", "exit", "print", "NoSuchError"])
def test_builtins_that_are_not_exceptions_are_task_errors(type_name: str) -> None:
    exc = decode_exception(record("builtins", type_name, "msg"))
    assert type(exc) is TaskError
    assert exc.type_name == type_name
    assert exc.message == "msg"


def test_pgtasks_errors_are_trusted_without_listing() -> None:
    exc = decode_exception(encode_exception(raised(NonDeterminismError("step mismatch"))))
    assert type(exc) is NonDeterminismError
    assert exc.args == ("step mismatch",)


@pytest.mark.parametrize("text", ["not json at all", "[1, 2]", "null", "42", '{"type": "ValueError"}'])
def test_garbage_is_unknown_error(text: str) -> None:
    exc = decode_exception(text)
    assert type(exc) is TaskError
    assert exc.type_name == "UnknownError"
    assert "unreadable error record" in exc.message


def test_error_summary() -> None:
    assert error_summary(None) == ""
    assert error_summary("") == ""
    assert error_summary(encode_exception(raised(ValueError("bad")))) == "ValueError: bad"
    assert error_summary("plain text") == "plain text"
    assert error_summary("x" * 500) == "x" * 200
    assert error_summary("[1]") == "[1]"
    assert error_summary('{"message": "m"}') == "Error: m"


def test_huge_arguments_are_not_tagged() -> None:
    huge = raised(UnicodeDecodeError("utf-8", b"\xff" * (70 * 1024), 0, 1, "invalid start byte"))
    data = json.loads(encode_exception(huge))
    assert data["args"] is None and "tagged_args" not in data
    assert len(encode_exception(huge)) < 64 * 1024  # the message is cut, the bytes never encoded


@pytest.mark.parametrize("countdown", [-1, 1e300, float("nan")])
def test_a_retry_countdown_out_of_range_names_the_range(countdown: float) -> None:
    """1e300 was refused as "must be a number of seconds >= 0"."""
    with pytest.raises(ConfigurationError, match=r"from 0 to 10\*\*9 \(31 years\), not "):
        RetryRequested(countdown=countdown)

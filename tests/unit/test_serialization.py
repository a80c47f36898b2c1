"""Codec: JSON with tagged extra types, opt-in pickle, and argument error messages."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from typing import Any

import pytest

from pgtasks.engine.errors import SerializationError
from pgtasks.engine.serialization import Codec


class Point:
    """A module-level class so pickle can find it."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    __hash__ = None  # type: ignore[assignment]


def roundtrip(value: Any, codec: Codec | None = None) -> Any:
    codec = codec or Codec()
    tag, text = codec.dumps(value)
    assert isinstance(text, str)
    return codec.loads(tag, text)


UTC = dt.timezone.utc
PLUS_5_30 = dt.timezone(dt.timedelta(hours=5, minutes=30))


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2024, 2, 29, 13, 45, 7, 123456, tzinfo=UTC),
        dt.datetime(2024, 2, 29, 13, 45, 7, 123456, tzinfo=PLUS_5_30),
        dt.datetime(2024, 2, 29, 13, 45, 7),
        dt.date(1999, 12, 31),
        dt.time(23, 59, 58, 1),
        dt.time(8, 0, tzinfo=UTC),
        dt.timedelta(days=-3, seconds=5, microseconds=7),
        dt.timedelta(0),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        decimal.Decimal("3.14159265358979323846264338327950288"),
        b"\x00\xffbinary\n",
        b"",
        None,
        True,
        "text ü",
        2**70,
        -1.5,
    ],
)
def test_json_roundtrip_preserves_value_and_type(value: Any) -> None:
    back = roundtrip(value)
    assert back == value
    assert type(back) is type(value)


def test_aware_datetime_keeps_its_offset() -> None:
    value = dt.datetime(2024, 1, 1, 12, 0, tzinfo=PLUS_5_30)
    back = roundtrip(value)
    assert back.utcoffset() == dt.timedelta(hours=5, minutes=30)


def test_naive_datetime_stays_naive() -> None:
    assert roundtrip(dt.datetime(2024, 1, 1, 12, 0)).tzinfo is None


def test_datetime_is_not_confused_with_date() -> None:
    tag, text = Codec().dumps(dt.datetime(2024, 1, 1, 0, 0))
    assert '"datetime"' in text
    assert type(Codec().loads(tag, text)) is dt.datetime


def test_nested_structures_roundtrip() -> None:
    value = {
        "when": [dt.date(2020, 1, 2), {"id": uuid.UUID(int=7), "amount": decimal.Decimal("1.10")}],
        "blob": {"data": b"abc", "nested": {"deeper": [dt.timedelta(hours=1), None]}},
        "plain": {"a": [1, 2.5, "x", False]},
    }
    assert roundtrip(value) == value


def test_tuples_come_back_as_lists() -> None:
    assert roundtrip((1, (2, 3), [4, (5,)])) == [1, [2, 3], [4, [5]]]


def test_dumps_returns_tag_and_compact_json() -> None:
    assert Codec().dumps({"a": [1, 2]}) == ("json", '{"a":[1,2]}')


@pytest.mark.parametrize(
    "value",
    [math.inf, -math.inf, [1, {"x": -math.inf}], ({"__type__": "float", "__value__": "inf"}, math.inf)],
)
def test_infinities_are_stored_as_tags_and_come_back(value: Any) -> None:
    tag, text = Codec().dumps(value)
    assert "Infinity" not in text and json.loads(text) is not None  # strict JSON
    back = Codec().loads(tag, text)
    assert back == (list(value) if isinstance(value, tuple) else value)


def test_nan_is_stored_as_a_tag_and_comes_back_nan() -> None:
    tag, text = Codec().dumps({"mean": math.nan, "values": [1.5, math.nan]})
    assert "NaN" not in text and text.count('"__type__":"float"') == 2
    back = Codec().loads(tag, text)
    assert math.isnan(back["mean"]) and back["values"][0] == 1.5 and math.isnan(back["values"][1])


@pytest.mark.parametrize("value", [object(), {1, 2}, frozenset(), Point(1, 2)])
def test_unsupported_types_are_refused(value: Any) -> None:
    with pytest.raises(SerializationError):
        Codec().dumps(value, "my value")


def test_serialization_error_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Codec().dumps(object())


def test_bad_positional_argument_is_named() -> None:
    with pytest.raises(SerializationError) as info:
        Codec().dumps_inputs("x", (1, object()), {})
    assert "argument 1 of task 'x'" in str(info.value)


def test_bad_first_argument_is_argument_0() -> None:
    with pytest.raises(SerializationError, match=r"argument 0 of task 'x'"):
        Codec().dumps_inputs("x", (object(), 1), {})


def test_bad_keyword_argument_is_named() -> None:
    with pytest.raises(SerializationError) as info:
        Codec().dumps_inputs("x", (1, 2), {"ok": 3, "when": {1, 2}})
    message = str(info.value)
    assert "keyword argument 'when'" in message
    assert "task 'x'" in message


def test_non_string_keyword_names_are_refused() -> None:
    with pytest.raises(SerializationError, match="must be str"):
        Codec().dumps_inputs("x", (), {(1, 2): 3})  # type: ignore[dict-item]


def test_inputs_roundtrip() -> None:
    codec = Codec()
    tag, text = codec.dumps_inputs("x", (1, dt.date(2020, 1, 1)), {"k": uuid.UUID(int=1)})
    args, kwargs = codec.loads_inputs(tag, text, "x")
    assert args == [1, dt.date(2020, 1, 1)]
    assert kwargs == {"k": uuid.UUID(int=1)}


def test_loads_unknown_tag_is_refused() -> None:
    with pytest.raises(SerializationError, match="yaml"):
        Codec().loads("yaml", "a: 1")


def test_dumps_unknown_tag_is_refused() -> None:
    with pytest.raises(SerializationError, match="msgpack"):
        Codec().dumps(1, tag="msgpack")


def test_pickle_tag_refused_when_not_accepted() -> None:
    pickle_codec = Codec(serializer="pickle", accept=frozenset({"json", "pickle"}))
    tag, text = pickle_codec.dumps(Point(1, 2))
    assert tag == "pickle"
    with pytest.raises(SerializationError, match="does not accept"):
        Codec().loads(tag, text)


def test_pickle_roundtrips_custom_object() -> None:
    codec = Codec(serializer="pickle", accept={"json", "pickle"})  # type: ignore[arg-type]
    assert roundtrip(Point(3, 4), codec) == Point(3, 4)
    assert roundtrip({"s": {1, 2}}, codec) == {"s": {1, 2}}
    # it still reads JSON rows
    assert codec.loads("json", '{"a":1}') == {"a": 1}


def test_pickle_of_unpicklable_value_is_refused() -> None:
    codec = Codec(serializer="pickle", accept=frozenset({"pickle"}))
    with pytest.raises(SerializationError, match="cannot be serialized as pickle"):
        codec.dumps(lambda: None)


def test_serializer_must_be_accepted() -> None:
    with pytest.raises(SerializationError, match="accept_content"):
        Codec(serializer="pickle", accept=frozenset({"json"}))


def test_unknown_serializer_is_refused() -> None:
    with pytest.raises(SerializationError, match="unknown serializer"):
        Codec(serializer="yaml", accept=frozenset({"yaml"}))
    with pytest.raises(SerializationError, match="unknown serializer"):
        Codec(accept=frozenset({"json", "yaml"}))


def test_accept_content_as_one_string_is_refused_not_read_as_its_letters() -> None:
    from pgtasks import App, ConfigurationError

    with pytest.raises(ConfigurationError) as refused:
        App("letters", "sqlite:///unused.sqlite3", accept_content="json")
    assert (
        str(refused.value) == "accept_content must be a list of serializer names such as ['json'], not 'json'"
    )


def test_invalid_json_text_is_refused() -> None:
    with pytest.raises(SerializationError, match="cannot be deserialized"):
        Codec().loads("json", "{not json")


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]",
        '{"kwargs": {}}',
        '{"args": []}',
        '{"args": "abc", "kwargs": {}}',
        '{"args": [], "kwargs": []}',
        '"just a string"',
        "null",
    ],
)
def test_loads_inputs_rejects_malformed_shapes(text: str) -> None:
    with pytest.raises(SerializationError, match="malformed"):
        Codec().loads_inputs("json", text, "x")


@pytest.mark.parametrize(
    "value",
    [
        {"__type__": "bytes", "__value__": "aGk="},  # would come back as b"hi"
        {"__type__": "bytes", "__value__": "not base64!"},  # would fail the task
        {"__type__": "dict", "__value__": [["a", 1]]},  # the escape's own shape
        {"__type__": ["unhashable"], "__value__": None},
        [{"x": {"__type__": "uuid", "__value__": {"__type__": "date", "__value__": "x"}}}, b"\x00"],
    ],
)
def test_a_plain_dict_shaped_like_a_tag_round_trips_unchanged(value: Any) -> None:
    codec = Codec()
    tag, text = codec.dumps(value)
    assert codec.loads(tag, text) == value
    args, kwargs = codec.loads_inputs(*codec.dumps_inputs("t", (value,), {"k": value}), "t")
    assert args == [value] and kwargs == {"k": value}


def test_rows_written_before_the_escape_read_back_as_before() -> None:
    stored = '{"a":{"__type__":"bytes","__value__":"aGk="},"b":{"__type__":"x","__value__":1}}'
    assert Codec().loads("json", stored) == {"a": b"hi", "b": {"__type__": "x", "__value__": 1}}


def test_a_float_tag_of_something_else_reads_as_the_dict_it_is() -> None:
    text = '{"__type__":"float","__value__":"abc"}'  # written before tags were escaped
    assert Codec().loads("json", text) == {"__type__": "float", "__value__": "abc"}

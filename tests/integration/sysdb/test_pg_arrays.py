"""The typed array parameters of the PostgreSQL dialect (pgtasks.sysdb.pg_arrays) reach the
server as the arrays psycopg's own list dumping sends."""

from __future__ import annotations

import psycopg

from pgtasks.sysdb.pg_arrays import BoolArray, Int4Array, Int8Array, TextArray


def test_typed_arrays_reach_the_server_as_given(pg_server_url: str) -> None:
    texts = ["a", None, "", "h\u00e9 \u2603 \U0001f600", "x" * 5000]
    int4s = [1, None, -(2**31), 2**31 - 1]
    int8s = [None, -(2**63), 2**63 - 1, 4_102_444_800_123]
    bools = [True, None, False, True]
    with psycopg.connect(pg_server_url) as conn:
        row = conn.execute(
            "SELECT %b::text[], %b::int[], %b::bigint[], %b::text[], %b::int[],"
            " pg_typeof(%b), array_lower(%b::text[], 1), %b::text[] IS NOT DISTINCT FROM %b::text[],"
            " %b::boolean[], %b::boolean[]",
            [
                TextArray(texts),
                Int4Array(int4s),
                Int8Array(int8s),
                TextArray([]),
                Int4Array([]),
                Int8Array([1]),
                TextArray(["a"]),
                TextArray(texts),
                texts,
                BoolArray(bools),
                BoolArray([]),
            ],
        ).fetchone()
    assert row == (texts, int4s, int8s, [], [], "bigint[]", 1, True, bools, [])

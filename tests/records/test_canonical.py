"""Digests are stable under formatting and change with any value."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from records.canonical import digest, parse_json
from tests.conftest import SEED_MANIFEST

SEED_PROTOCOL_DIGEST = "sha256:3f554a31a601edfb225b1828b104ce4c9a8254dd925ee6ce63fc357304b2098a"


def digest_of(text: str) -> str:
    return digest(parse_json(text))


def test_key_order_does_not_change_a_digest() -> None:
    assert digest_of('{"a": 1, "b": {"x": [1, 2], "y": "z"}}') == digest_of('{"b": {"y": "z", "x": [1, 2]}, "a": 1}')


def test_whitespace_does_not_change_a_digest() -> None:
    assert digest_of('{"a":[1,2,{"b":null}]}') == digest_of('{\n  "a" : [ 1 ,\n 2, { "b" : null } ]\n}\n')


@pytest.mark.parametrize(
    ("left", "right"),
    [("1.0", "1"), ("1e-3", "0.001"), ("1E3", "1000"), ("0.10", "0.1"), ("-0.0", "0"), ("2.5e1", "25")],
)
def test_number_spelling_does_not_change_a_digest(left: str, right: str) -> None:
    assert digest_of(f'{{"latency": {left}}}') == digest_of(f'{{"latency": {right}}}')


@pytest.mark.parametrize(
    "changed",
    [
        '{"latency": 175458, "gpu": "B200", "cases": [1, 2]}',
        '{"latency": 175457.5, "gpu": "B200", "cases": [1, 2]}',
        '{"latency": 175457, "gpu": "B200 ", "cases": [1, 2]}',
        '{"latency": 175457, "gpu": "B200", "cases": [2, 1]}',
        '{"latency": 175457, "gpu": "B200", "cases": [1, 2], "extra": null}',
        '{"latency": "175457", "gpu": "B200", "cases": [1, 2]}',
    ],
)
def test_any_change_of_value_changes_the_digest(changed: str) -> None:
    assert digest_of(changed) != digest_of('{"latency": 175457, "gpu": "B200", "cases": [1, 2]}')


def test_the_recipe_is_sha256_of_rfc8785() -> None:
    # The seed's protocol document, whose RFC 8785 digest DESIGN.md records as 3f554a31…
    protocol = json.loads(SEED_MANIFEST.read_text())["protocol"]
    assert digest(protocol) == SEED_PROTOCOL_DIGEST


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e999}'])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"number|double"):
        parse_json(text)


def test_duplicate_keys_are_refused_not_silently_dropped() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        parse_json('{"latency": 1, "latency": 2}')


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(json_values, st.sampled_from([None, 0, 2]), st.booleans())
def test_any_reformatting_keeps_the_digest(value: object, indent: int | None, sort_keys: bool) -> None:
    reformatted = json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=sort_keys)
    assert digest(parse_json(reformatted)) == digest(value)

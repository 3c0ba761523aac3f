"""Digests are stable under formatting and change with any value."""

from __future__ import annotations

import json

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from records.canonical import CanonicalizationError, canonical_bytes, canonical_text, digest, parse_json
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


def containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    containers,
    max_leaves=20,
)


@given(json_values, st.sampled_from([None, 0, 2]), st.booleans())
def test_any_reformatting_keeps_the_digest(value: object, indent: int | None, sort_keys: bool) -> None:
    reformatted = json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=sort_keys)
    assert digest(parse_json(reformatted)) == digest(value)


# Characters where a canonicaliser can go wrong: escapes, controls, non-ASCII,
# BMP characters above the surrogates (which sort after astral ones in UTF-16),
# astral characters, and lone surrogates (which are not UTF-8).
tricky_characters = st.sampled_from(
    ["a", "Z", "0", '"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028"]
    + ["\ue000", "\uffff", "\U0001d11e", "\U0001f600", "\ud800", "\udfff"]
)
any_text = st.text(st.characters(exclude_categories=()) | tricky_characters, max_size=12)
# Every double, including subnormals, the exponent-form boundaries and the ones RFC 8785 refuses.
any_float = st.floats() | st.sampled_from(
    [1e-7, 1e-6, 9.999999999999999e-7, 1e-5, 1e-4, 1e15, 1e16, 1e20, 1e21, 9.999999999999999e20, 5e-324, -0.0]
)
any_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**54), max_value=2**54) | any_float | any_text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(any_text, children, max_size=5),
    max_leaves=30,
)


def reference_bytes(value: object) -> bytes | type[ValueError]:
    try:
        return rfc8785.dumps(value)  # type: ignore[arg-type]
    except ValueError:  # rfc8785's CanonicalizationError, or a UnicodeError from a lone surrogate
        return ValueError


@settings(max_examples=2000)
@given(any_json)
@example({"\U0001f600": 1, "\ue000": 2, "a": 3})
@example([1e16, 1e21, 1.5e-7, 2.5e-6, 123.0, -0.0, 2**53 - 1, -(2**53) + 1])
@example({"nested": [{"b": None, "a": [True, False, "\u00e9\n"]}]})
def test_the_fast_canonicaliser_writes_exactly_the_reference_bytes(value: object) -> None:
    expected = reference_bytes(value)
    if expected is ValueError:
        with pytest.raises(CanonicalizationError):
            canonical_bytes(value)
    else:
        assert canonical_bytes(value) == expected
        assert canonical_text(value) == expected.decode()

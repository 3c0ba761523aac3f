"""Canonical JSON (RFC 8785, JCS) and the content digests built on it.

A document's digest is `sha256:` + the hex sha256 of its canonical form, so two
documents that differ only in key order, whitespace or number spelling (1.0 vs
1, 1e-3 vs 0.001) share a digest, and any change of value gives a new one.

The `rfc8785` package is the reference; `canonical_bytes` writes the same bytes
several times faster (an import canonicalises two documents per run), and a
property test holds the two to byte equality on arbitrary JSON values.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

DIGEST_PREFIX = "sha256:"
DIGEST_LENGTH = len(DIGEST_PREFIX) + 64
# RFC 8785 numbers are IEEE doubles: larger integers would not survive a round trip.
SAFE_INTEGER = 2**53 - 1


class CanonicalizationError(ValueError):
    """A value JSON can carry but RFC 8785 cannot (NaN, huge integers, ...)."""


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 form of a JSON value; raises CanonicalizationError."""
    parts: list[str] = []
    _write(value, parts.append)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalizationError("input contains non-UTF-8 codepoints") from None


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def _write(value: Any, write: Callable[[str], object]) -> None:
    # Exact types first: they are nearly all a document holds. JSON's own string
    # escaping (C) is RFC 8785's: only ", \ and controls, as \b \f \n \r \t or \u00xx.
    kind = type(value)
    if kind is str:
        write(encode_basestring(value))
    elif kind is dict:
        _write_object(value, write)
    elif kind is int:
        if -SAFE_INTEGER <= value <= SAFE_INTEGER:
            write(str(value))
        else:
            raise CanonicalizationError(f"{value} exceeds safe integer domain for JSON floats")
    elif kind is float:
        write(_number_text(value))
    elif kind is list or kind is tuple:
        write("[")
        first = True
        for element in value:
            if not first:
                write(",")
            first = False
            _write(element, write)
        write("]")
    elif value is None:
        write("null")
    elif value is True:
        write("true")
    elif value is False:
        write("false")
    else:
        _write_subclass(value, write)


def _write_object(value: dict[Any, Any], write: Callable[[str], object]) -> None:
    try:
        # Joining the keys also proves each one is a string.
        all_ascii = "".join(value).isascii()
    except TypeError:
        raise CanonicalizationError("object keys must be strings") from None
    # Keys sort by their UTF-16 code units; for ASCII that is plain string order.
    keys = sorted(value) if all_ascii else sorted(value, key=_utf16)
    write("{")
    first = True
    for key in keys:
        if not first:
            write(",")
        first = False
        write(encode_basestring(key))
        write(":")
        _write(value[key], write)
    write("}")


def _utf16(key: str) -> bytes:
    try:
        return key.encode("utf-16be")
    except UnicodeEncodeError:
        raise CanonicalizationError("input contains non-UTF-8 codepoints") from None


def _write_subclass(value: Any, write: Callable[[str], object]) -> None:
    """bool, int, str, float, list and dict subclasses (enums, OrderedDict), as the reference treats them."""
    if isinstance(value, bool):
        write("true" if value else "false")
    elif isinstance(value, int):
        _write(int(value), write)
    elif isinstance(value, str):
        write(encode_basestring(value))
    elif isinstance(value, float):
        write(_number_text(float(value)))
    elif isinstance(value, (list, tuple)):
        _write(list(value), write)
    elif isinstance(value, dict):
        _write_object(dict(value), write)
    else:
        raise CanonicalizationError(f"unsupported type: {type(value)}")


def _number_text(number: float) -> str:
    """ECMAScript's Number-to-String, from Python's shortest round-trip repr."""
    if number != number or number in (math.inf, -math.inf):
        raise CanonicalizationError(f"{number} is not representable in JCS")
    if number == 0:
        return "0"  # -0 too
    text = repr(number)
    if "e" not in text:
        # Between 1e-4 and 1e16 the digits and the point are already ECMAScript's.
        return text[:-2] if text.endswith(".0") else text
    return _exponent_number_text(text)


def _exponent_number_text(text: str) -> str:
    """repr's exponent forms (below 1e-4, from 1e16): plain digits down to 1e-6 and up to 1e21."""
    sign = "-" if text.startswith("-") else ""
    mantissa, exponent_text = text.lstrip("-").split("e")
    exponent = int(exponent_text)
    whole, _, fraction = mantissa.partition(".")
    fraction = "" if fraction == "0" else fraction
    digits = whole + fraction
    if 0 < exponent < 21:
        return sign + digits + "0" * (exponent + 1 - len(digits))
    if -7 < exponent < 0:
        return sign + "0." + "0" * (-exponent - 1) + digits
    point = "." + fraction if fraction else ""
    return f"{sign}{whole}{point}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def digest_of_bytes(data: bytes) -> str:
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    return digest_of_bytes(canonical_bytes(value))


DIGEST_PATTERN = re.compile(r"sha256:[0-9a-f]{64}")


def is_digest(value: object) -> bool:
    return isinstance(value, str) and DIGEST_PATTERN.fullmatch(value) is not None


def short_digest(value: str, length: int = 16) -> str:
    """`sha256:9c30d4100296278b` — enough to recognise, never to verify."""
    return value[: len(DIGEST_PREFIX) + length]


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} appears twice in one object")
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means a repeated key")


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a double")
    return number


# One decoder for every document: json.loads with options builds a new one per call.
_STRICT_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant, parse_float=_finite_float
)


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: no NaN or Infinity, and no duplicate keys (which json.loads silently drops)."""
    if isinstance(text, (bytes, bytearray)):
        # As json.loads reads bytes: UTF-8, -16 or -32, a UTF-8 byte order mark allowed.
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    elif text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT_DECODER.decode(text)

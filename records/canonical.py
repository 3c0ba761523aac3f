"""Canonical JSON (RFC 8785, JCS) and the content digests built on it.

A document's digest is `sha256:` + the hex sha256 of its canonical form, so two
documents that differ only in key order, whitespace or number spelling (1.0 vs
1, 1e-3 vs 0.001) share a digest, and any change of value gives a new one.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import rfc8785

DIGEST_PREFIX = "sha256:"
DIGEST_LENGTH = len(DIGEST_PREFIX) + 64


class CanonicalizationError(ValueError):
    """A value JSON can carry but RFC 8785 cannot (NaN, huge integers, ...)."""


def canonical_bytes(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as error:
        raise CanonicalizationError(str(error)) from None


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def digest_of_bytes(data: bytes) -> str:
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    return digest_of_bytes(canonical_bytes(value))


def is_digest(value: object) -> bool:
    if not isinstance(value, str) or len(value) != DIGEST_LENGTH or not value.startswith(DIGEST_PREFIX):
        return False
    return all(c in "0123456789abcdef" for c in value[len(DIGEST_PREFIX) :])


def short_digest(value: str, length: int = 16) -> str:
    """`sha256:9c30d4100296278b` — enough to recognise, never to verify."""
    return value[: len(DIGEST_PREFIX) + length]


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a double")
    return number


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: no NaN or Infinity, and no duplicate keys (which json.loads silently drops)."""
    return json.loads(
        text,
        object_pairs_hook=_no_duplicate_keys,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
    )

"""The cache holds JSON, never a pickle (web/json_cache.py): on the configured backend (files here, Redis in CI)
and in Django's file format, where a laptop's cache lives.

A planted pickle on Redis, under the keys the site reads, is tried in tests/runs/test_broker_doors.py.
"""

from __future__ import annotations

import math
import pickle
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.cache.backends.filebased import FileBasedCache

from web.json_cache import JsonFileBasedCache, JsonSerializer, UnreadableValueError


class Planted:
    """A value whose unpickling creates a file: what an attacker would store, in place of a shell command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize(
    "value", [0, 12, -3, 1.5, "text", True, None, [1, "two", [3]], {"page": {"content": "PGgxPg==", "gzipped": False}}]
)
def test_json_values_come_back_as_they_went_in(value: Any) -> None:
    cache.set("value", value)
    assert cache.get("value") == value
    assert type(cache.get("value")) is type(value)


def test_integers_stay_integers_that_incr_raises() -> None:
    assert JsonSerializer().dumps(41) == 41  # raw, as Redis's INCR needs it
    cache.set("counter", 41)
    assert cache.incr("counter") == 42
    assert cache.get("counter") == 42


def test_a_tuple_comes_back_a_list() -> None:
    cache.set("stamp", (1, "2026-12-06", "release"))
    assert cache.get("stamp") == [1, "2026-12-06", "release"]


@pytest.mark.parametrize("value", [b"bytes", datetime.now(UTC), {1, 2}, math.nan, object()])
def test_a_value_json_cannot_carry_is_refused_when_it_is_stored(value: Any) -> None:
    with pytest.raises(TypeError, match="the cache stores JSON only"):
        cache.set("refused", value)
    assert cache.get("refused") is None


def test_a_counter_that_holds_no_integer_cannot_be_incremented_and_says_so_as_a_missing_one() -> None:
    cache.set("counter", "forty-one")
    with pytest.raises(ValueError, match="holds no integer"):
        cache.incr("counter")


def test_a_pickle_is_never_unpickled_by_the_serializer(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    with pytest.raises(UnreadableValueError):
        JsonSerializer().loads(pickle.dumps(Planted(marker)))
    assert not marker.exists()


def test_a_file_djangos_backend_pickled_is_a_miss_and_is_never_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    folder = tmp_path / "cache"
    FileBasedCache(str(folder), {}).set("planted", Planted(marker), timeout=None)
    json_cache = JsonFileBasedCache(str(folder), {})
    assert json_cache.get("planted", "a miss") == "a miss"
    assert not json_cache.touch("planted")
    assert not marker.exists()
    json_cache.set("planted", "replaced")
    assert json_cache.get("planted") == "replaced"


def test_the_file_cache_keeps_expiry_and_touch(tmp_path: Path) -> None:
    json_cache = JsonFileBasedCache(str(tmp_path / "cache"), {})
    json_cache.set("gone", 1, timeout=-1)
    json_cache.set("kept", {"a": [1]}, timeout=None)
    assert json_cache.get("gone") is None
    assert json_cache.touch("kept", timeout=60)
    assert json_cache.get("kept") == {"a": [1]}
    assert json_cache.add("kept", 2) is False
    assert json_cache.has_key("kept")

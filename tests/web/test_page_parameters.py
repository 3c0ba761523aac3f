"""No spelling of a page's parameters makes a cache entry of its own, and the cache holds a bounded number of pages.

A crawler (or anyone) can write a parameter endless ways: `?definitions_page=01`,
`=abc`, `=-5`, `=99999999`, a cursor edited by hand, a search with spaces around
it. Each used to render and store a page of its own, so the cache grew with
whatever was asked.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import caches
from django.test import Client

from runs.models import Run
from tests.pages import queries_for

SOURCE = "/sources/sol-execbench"


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The key of every page the page cache stores, in order."""
    backend = caches["default"]
    keys: list[str] = []
    real_set = backend.set

    def recording_set(key: str, *args: Any, **kwargs: Any) -> Any:
        if re.fullmatch(r"pages:[0-9]+", key):
            keys.append(key)
        return real_set(key, *args, **kwargs)

    monkeypatch.setattr(backend, "set", recording_set)
    return keys


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("?definitions_page=abc", ""),
        ("?definitions_page=01", ""),
        ("?definitions_page=-5", ""),
        ("?definitions_page=0", ""),
        ("?definitions_page=1&definitions_page=1", ""),
        ("?empty=yes", ""),
        ("?after=not-a-cursor", ""),
        ("?empty=shown&definitions_page=001", "?empty=shown"),
    ],
)
def test_every_spelling_of_a_page_is_served_from_its_one_entry(
    client: Client, run: Run, stored: list[str], spelling: str, canonical: str
) -> None:
    queries_for(client, SOURCE + canonical)
    assert len(stored) == 1
    assert queries_for(Client(), SOURCE + spelling) == 0, spelling
    assert len(stored) == 1


@pytest.mark.parametrize("page", ["abc", "01", "-5", "99999999"])
def test_home_keeps_one_entry_whatever_page_is_asked(client: Client, run: Run, stored: list[str], page: str) -> None:
    """Home pages by cursor (?after=); a page number is not one of its parameters, so every spelling is home."""
    queries_for(client, "/")
    assert queries_for(Client(), f"/?page={page}") == 0
    assert len(stored) == 1


def test_a_page_past_the_last_is_not_found_and_not_stored(client: Client, run: Run, stored: list[str]) -> None:
    assert client.get(SOURCE, {"definitions_page": "99999999"}).status_code == 404
    assert stored == []


def test_search_text_is_keyed_as_the_search_reads_it(client: Client, run: Run, stored: list[str]) -> None:
    queries_for(client, "/?q=softmax")
    assert queries_for(Client(), "/?q=%20softmax%20&utm_source=x") == 0
    assert len(stored) == 1


def test_the_cache_holds_at_most_its_number_of_pages(
    client: Client, run: Run, stored: list[str], settings: Any
) -> None:
    settings.PAGE_CACHE_ENTRIES = 5
    for n in range(40):
        assert client.get("/", {"q": f"query {n}"}).status_code == 200
    assert len(stored) == 40
    assert len(set(stored)) <= 5
    # A page that finds another in its slot renders again, and what it shows is its own.
    for n in range(40):
        assert f'value="query {n}"' in client.get("/", {"q": f"query {n}"}).content.decode()

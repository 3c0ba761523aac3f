"""Helpers for page tests: visible text, query counts, and synthetic SOL-ExecBench records."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

# The header htmx sends with its requests: views answer with the page's fragment.
HTMX = {"HX-Request": "true"}
SOL_SUBMISSIONS = Path(__file__).parent / "data" / "sol-execbench" / "submissions.jsonl"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"script", "style"}:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in {"script", "style"}:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def visible_text(html: str | bytes) -> str:
    """What a reader sees: text without tags, scripts or styles, entities as characters, whitespace single spaces."""
    parser = _Text()
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return re.sub(r"\s+", " ", " ".join(parser.parts)).strip()


def queries_for(client: Client, url: str) -> int:
    """How many database queries a successful GET of `url` makes."""
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def squeezed(text: str) -> str:
    """Text without any whitespace: pages and the seed's text extraction space things differently."""
    return re.sub(r"\s+", "", text)


def sol_records(count: int, kernel_id: int = 8, start_id: int = 900_000) -> list[dict[str, Any]]:
    """`count` distinct submissions to one kernel, built from a real record."""
    template = json.loads(SOL_SUBMISSIONS.read_text().splitlines()[0])
    template.pop("event")
    template["kernel_id"] = kernel_id
    return [
        template
        | {"id": start_id + i, "latency_ms": round(0.02 + i * 0.001, 6), "sol_score": round(0.9 - i * 0.001, 6)}
        for i in range(count)
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path

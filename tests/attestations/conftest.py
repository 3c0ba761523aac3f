"""Fixtures for the attestation tests: a real imported run, htmx and plain clients."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from runs.models import Run
from tests.conftest import ImportRuns

HTMX = {"HX-Request": "true"}


@pytest.fixture
def run(import_runs: ImportRuns, sample: Path) -> Run:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    found = Run.objects.order_by("run_id").first()
    assert found is not None
    return found


def text_of(html: str | bytes) -> str:
    """What a reader sees: tags become spaces, entities characters, whitespace single spaces."""
    page = html.decode() if isinstance(html, bytes) else html
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]*>", " ", page))).strip()


def note_data(**fields: str) -> dict[str, str]:
    """A valid reproduction as the form posts it, with `fields` overriding."""
    data = {
        "kind": "reproduction",
        "outcome": "reproduced",
        "latency_value": "181.2",
        "latency_unit": "us",
        "gpu": "NVIDIA H100 80GB HBM3",
        "body": "Ran the submission with the SOL-ExecBench harness, 100 iterations.",
        "author_name": "Ada",
        "contact_email": "ada@example.org",
        "website": "",
    } | fields
    return {f"note-{name}": value for name, value in data.items()}


def report_data(**fields: str) -> dict[str, str]:
    data = {"category": "wrong_numbers", "body": "The latency is 10× the board's.", "contact": "", "website": ""}
    return {f"report-{name}": value for name, value in (data | fields).items()}

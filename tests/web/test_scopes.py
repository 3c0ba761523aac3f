"""Page-cache scopes are declared once (web/scopes.py): every kind of cached page, every writer, what each retires.

The tables below are the declaration as a reviewer reads it. Adding a cached view
whose kind is not declared, a writer, or a scope to either, fails here until the
table says so; and no code outside web/ may retire pages but through a writer.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from attestations.models import Attestation
from attestations.services import moderate_attestations
from runs.models import Run
from tests.pages import queries_for
from web import scopes

ROOT = Path(__file__).resolve().parent.parent.parent
# Each kind of cached page and the scopes it shows, for URL arguments a, b, key, name, source, run_id, digest.
PAGE_KINDS = {
    "lists": ["lists"],
    "run": ["run:R"],
    "group": ["group:K"],
    "definition": ["definition:S/N"],
    "source": ["source:K"],
    "compare": ["lists", "run:A", "run:B"],
    "document": [],
    "verification": ["verification"],
    "disputes": ["disputes"],
}
# Each writer, and what it retires of the runs it wrote.
WRITERS = {
    "import": "every page",
    "withdrawal or restore": {"run", "group", "definition", "source", "lists"},
    "rerun result imported": {"run", "group", "definition", "source", "lists"},
    "rerun verdict or re-evaluation": {"run", "group", "definition", "source", "lists"},
    "rerun requested, started, retried, failed or cancelled": {"run"},
    "note submitted": set(),
    "note approved, rejected, edited or deleted": {"run"},
    "issue report filed or moderated": {"run"},
    "verification queue changed": {"verification"},
    "verification places moved": {"verification-places"},
    "dispute opened, closed or summarised": {"run", "disputes"},
}
EXAMPLE_ARGUMENTS = {"a": "A", "b": "B", "key": "K", "name": "N", "source": "S", "run_id": "R", "digest": "D"}
# The functions that retire pages directly; outside web/, only a declared writer calls them.
LOW_LEVEL = {"bump_generation", "bump_generation_on_commit", "retire_pages", "retire_pages_on_commit"}
PACKAGES = ("runs", "verification", "attestations", "api", "records", "harness", "kernelindex")


def views(resolver: URLResolver) -> Iterator[tuple[str, Callable[..., Any]]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from views(entry)
        elif isinstance(entry, URLPattern):
            yield str(entry.pattern), entry.callback


def page_kind(view: Callable[..., Any]) -> scopes.PageKind | None:
    """The kind a view's cached_page names, through the decorators around it (functools.wraps keeps the chain)."""
    while view is not None:
        if (kind := getattr(view, "page_kind", None)) is not None:
            return kind  # type: ignore[no-any-return]
        view = getattr(view, "__wrapped__", None)  # type: ignore[assignment]
    return None


def test_every_kind_of_page_shows_what_the_table_says() -> None:
    declared = {
        name: kind.scopes(**{arg: EXAMPLE_ARGUMENTS[arg] for arg in kind.shows.__code__.co_varnames})
        for name, kind in scopes.PAGES.items()
    }
    assert declared == PAGE_KINDS


def test_every_cached_view_names_a_declared_kind_and_every_kind_has_views() -> None:
    kinds = {pattern: page_kind(view) for pattern, view in views(get_resolver())}
    cached = {pattern: kind for pattern, kind in kinds.items() if kind is not None}
    assert all(kind in scopes.PAGES.values() for kind in cached.values()), cached
    assert {kind.name for kind in cached.values()} == set(scopes.PAGES)
    # The pages a visitor reads most are cached, with the kind that says what they show.
    assert {pattern: kind.name for pattern, kind in cached.items() if pattern in {"", "runs/<str:run_id>"}} == {
        "": "lists",
        "runs/<str:run_id>": "run",
    }


def test_every_writer_retires_what_the_table_says() -> None:
    declared = {
        name: writer.retires if isinstance(writer.retires, str) else {str(part) for part in writer.retires}
        for name, writer in scopes.WRITERS.items()
    }
    assert declared == WRITERS


def python_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from (path for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts)


def test_no_code_outside_web_retires_pages_but_through_a_writer() -> None:
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ({alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()) | (
                {node.attr} if isinstance(node, ast.Attribute) else set()
            )
            if names & LOW_LEVEL:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_every_declared_writer_is_used() -> None:
    """A writer nobody calls is a declaration that retires nothing: the write it names forgot it."""
    constants = {name for name, value in vars(scopes).items() if isinstance(value, scopes.Writer)}
    assert len(constants) == len(scopes.WRITERS)
    source = "\n".join(path.read_text() for path in python_files())
    unused = [name for name in constants if f"{name}.retire_" not in source]
    assert unused == []


@pytest.mark.parametrize("writer", list(scopes.WRITERS.values()), ids=list(scopes.WRITERS))
def test_a_writer_retires_only_the_scopes_of_its_run(writer: scopes.Writer, run: Run) -> None:
    expected = {
        "run": f"run:{run.run_id}",
        "group": f"group:{run.group.key}",
        "definition": f"definition:{run.definition.source}/{run.definition.name}" if run.definition else None,
        "source": f"source:{run.source}",
        "lists": "lists",
        "verification": "verification",
        "verification-places": "verification-places",
        "disputes": "disputes",
    }
    retired = set(writer.scopes([run]))
    if writer.retires == scopes.SITE:
        assert retired == set()  # the site's generation moves instead
    else:
        assert retired == {expected[part] for part in writer.retires}


def test_approving_a_note_retires_its_run_page_and_no_other(
    client: Client, run: Run, admin_user: User, django_capture_on_commit_callbacks: Any
) -> None:
    other = Run.objects.exclude(pk=run.pk).first()
    assert other is not None
    pages = ["/", "/index.json", run.group.get_absolute_url(), other.get_absolute_url(), run.get_absolute_url()]
    for page in pages:
        queries_for(client, page)
    note = Attestation.objects.create(run=run, kind="note", body="Seen on an H100 too.")
    with django_capture_on_commit_callbacks(execute=True):
        moderate_attestations(Attestation.objects.filter(pk=note.pk), "approved", admin_user)
    assert "Seen on an H100 too." in client.get(run.get_absolute_url()).content.decode()
    assert {page: queries_for(client, page) for page in pages[:-1]} == dict.fromkeys(pages[:-1], 0)

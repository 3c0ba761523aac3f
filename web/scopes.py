"""Page-cache scopes, declared once: what each kind of cached page shows, and what each writer retires.

A cached page is served only while every scope it shows keeps its generation
(web/cache.py); a write retires the scopes of what it changed once its transaction
commits. Both halves are declared here, and nowhere else:

- `PAGES`: each kind of cached page and the scopes it shows, from its URL's
  arguments. A view names its kind (`@cached_page(RUN)`); a run page also learns
  its group and definition as it renders (`run_page_scopes`).
- `WRITERS`: each kind of write that changes what pages show, and which parts of a
  run's pages it retires. A writer calls `NOTE_MODERATED.retire_on_commit(run)`;
  nothing else retires pages.

The scopes:

- `run:<id>`: the run's page, JSON twin, badge and history, and compare pages with it;
- `group:<key>`: the group's leaderboard, JSON twin and feed, and the page of every
  run in it (each shows its rank and the group's #1);
- `definition:<source>/<name>`: the definition's page, JSON twin and feed, and the
  page of every run of it (each shows its source rank);
- `source:<key>`: the source's page, JSON twin and feed;
- `lists`: home, index.json, the rerun-verdict feed, and compare pages.

tests/web/test_scopes.py lists every kind and every writer with what it retires,
and fails when a cached view names no kind or a writer is added undeclared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from web.cache import bump_generation, bump_generation_on_commit, retire_pages, retire_pages_on_commit

LISTS = "lists"
# The verification policy's queue (verification/policy.py): /verification shows all of it (budgets, what ran today);
# a run page shows only the run's place in it, retired when the places move, not at every rerun's end.
VERIFICATION = "verification"
VERIFICATION_PLACES = "verification-places"
# Disputes (verification/disputes.py): /disputes, its JSON twin and its feed show every one.
DISPUTES = "disputes"


def run_scope(run_id: str) -> str:
    return f"run:{run_id}"


def group_scope(key: str) -> str:
    return f"group:{key}"


def definition_scope(source: str, name: str) -> str:
    return f"definition:{source}/{name}"


def source_scope(key: str) -> str:
    return f"source:{key}"


# -- what a writer hands over: a run, as runs.models.Run has it (web imports no app) ------------------


class Keyed(Protocol):
    @property
    def key(self) -> str: ...


class Named(Protocol):
    @property
    def source(self) -> str: ...

    @property
    def name(self) -> str: ...


class RunLike(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def group(self) -> Keyed: ...

    @property
    def definition(self) -> Named | None: ...


def run_page_scopes(run: RunLike) -> list[str]:
    """What a run's page shows besides the run: its group (its rank, the #1) and its definition (source ranks)."""
    scopes = [run_scope(run.run_id), group_scope(run.group.key)]
    if run.definition is not None:
        scopes.append(definition_scope(run.definition.source, run.definition.name))
    return scopes


# -- kinds of page ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageKind:
    """A kind of cached page: its name, the scopes it shows (from its URL's arguments), and which pages."""

    name: str
    shows: Callable[..., list[str]]
    pages: str

    def scopes(self, **url_arguments: str) -> list[str]:
        return self.shows(**url_arguments)


PAGES: dict[str, PageKind] = {}


def _page(name: str, shows: Callable[..., list[str]], pages: str) -> PageKind:
    PAGES[name] = kind = PageKind(name, shows, pages)
    return kind


LISTS_PAGE = _page("lists", lambda: [LISTS], "home, index.json and the rerun-verdict feed: every run")
RUN = _page(
    "run",
    lambda run_id: [run_scope(run_id)],
    "a run's page (which learns run_page_scopes), JSON, badge, history, manifest",
)
GROUP = _page("group", lambda key: [group_scope(key)], "a comparison group's leaderboard, JSON twin and feed")
DEFINITION = _page(
    "definition", lambda source, name: [definition_scope(source, name)], "a definition's page, JSON twin and feed"
)
SOURCE = _page("source", lambda key: [source_scope(key)], "a source's page, JSON twin and feed")
COMPARE = _page("compare", lambda a, b: [LISTS, run_scope(a), run_scope(b)], "two runs side by side, and its JSON")
DOCUMENT = _page("document", lambda digest: [], "a stored document: content-addressed, it never changes")
VERIFICATION_PAGE = _page("verification", lambda: [VERIFICATION], "the verification queue and its JSON twin")
DISPUTES_PAGE = _page("disputes", lambda: [DISPUTES], "the disputes, their JSON twin and their feed")


# -- writers ------------------------------------------------------------------------------------------


class Part(StrEnum):
    """Which pages of a run a write changes."""

    RUN = "run"
    GROUP = "group"
    DEFINITION = "definition"
    SOURCE = "source"
    LISTS = "lists"
    # The verification queue: no run's part, the whole queue (/verification), and the places in it (run pages).
    VERIFICATION = "verification"
    VERIFICATION_PLACES = "verification-places"
    # Every dispute: no run's part either.
    DISPUTES = "disputes"


# The parts no one run has: each is one scope, whichever runs were written.
QUEUE_PARTS = {
    Part.VERIFICATION: VERIFICATION,
    Part.VERIFICATION_PLACES: VERIFICATION_PLACES,
    Part.DISPUTES: DISPUTES,
}
EVERY_PART = frozenset(Part) - set(QUEUE_PARTS)
SITE = "every page"  # a write that may change anything: the site's generation moves


@dataclass(frozen=True)
class Writer:
    """A kind of write, the parts of its runs' pages it changes (or SITE), and why."""

    name: str
    retires: frozenset[Part] | str
    why: str

    def scopes(self, runs: Iterable[RunLike]) -> list[str]:
        """The scopes this write retires for these runs (SITE retires by generation, not by scope)."""
        if isinstance(self.retires, str):
            return []
        queue = [scope for part, scope in QUEUE_PARTS.items() if part in self.retires]
        per_run = [part for part in Part if part in self.retires and part not in QUEUE_PARTS]
        return queue + list(dict.fromkeys(scope for run in runs for part in per_run for scope in _of(run, part)))

    def retire_on_commit(self, *runs: RunLike) -> None:
        """Retire what this write changed once the transaction commits (at once outside one)."""
        if self.retires == SITE:
            bump_generation_on_commit()
        elif scopes := self.scopes(runs):
            retire_pages_on_commit(*scopes)

    def retire_now(self, *runs: RunLike) -> None:
        """For a write already committed (a conditional UPDATE outside a transaction)."""
        if self.retires == SITE:
            bump_generation()
        elif scopes := self.scopes(runs):
            retire_pages(*scopes)


def _of(run: RunLike, part: Part) -> list[str]:
    """The scopes of one part of a run's pages."""
    if part is Part.RUN:
        return [run_scope(run.run_id)]
    if part is Part.GROUP:
        return [group_scope(run.group.key)]
    if part is Part.DEFINITION:
        return [definition_scope(run.definition.source, run.definition.name)] if run.definition else []
    if part is Part.SOURCE:
        return [source_scope(run.source)]
    return [LISTS]


WRITERS: dict[str, Writer] = {}


def _writer(name: str, retires: Iterable[Part] | str, why: str) -> Writer:
    WRITERS[name] = writer = Writer(name, retires if isinstance(retires, str) else frozenset(retires), why)
    return writer


IMPORT = _writer("import", SITE, "import_runs and the API may add or change any run, group, definition or board")
WITHDRAWAL = _writer(
    "withdrawal or restore",
    EVERY_PART,
    "the run leaves or rejoins its group's ranking, its definition's source ranks, its source's page, the lists",
)
RERUN_RESULT = _writer(
    "rerun result imported", EVERY_PART, "a rerun's result is a new run, in its own group, definition, source, lists"
)
RERUN_VERDICT = _writer(
    "rerun verdict or re-evaluation",
    EVERY_PART,
    "the run's evidence level shows beside it everywhere and moves it in its group's ranking",
)
RERUN_PROGRESS = _writer(
    "rerun requested, started, retried, failed or cancelled", {Part.RUN}, "only the run's reruns section shows it"
)
NOTE_SUBMITTED = _writer("note submitted", (), "a note waits for a moderator: no page shows it")
NOTE_MODERATED = _writer(
    "note approved, rejected, edited or deleted", {Part.RUN}, "only its run's page shows approved notes"
)
VERIFICATION_QUEUE = _writer(
    "verification queue changed",
    {Part.VERIFICATION},
    "the sweep saw the queue change (runs queued, budgets, pauses, workers, what ran): /verification",
)
VERIFICATION_PLACES_MOVED = _writer(
    "verification places moved",
    {Part.VERIFICATION_PLACES},
    "the sweep saw the waiting runs' places, a class's pause, worker or spent budget change: each run's place",
)
REPORT = _writer(
    "issue report filed or moderated", {Part.RUN}, "the run's page lists each report's kind and where it stands"
)
DISPUTE = _writer(
    "dispute opened, closed or summarised",
    {Part.RUN, Part.DISPUTES},
    "the run's page lists its reports with their disputes; /disputes, its twin and feed list every dispute",
)

"""What the apps built on runs add to its run page, the page's JSON twin and a leaderboard's #1: runs never imports
them.

verification/ (reruns, evidence, the verification policy) imports runs and is never imported by it
(tests/verification/test_boundaries.py), as attestations/ is not (tests/web/test_package_layers.py). Where
the run page, its twin or the API's copy of the twin shows what such an app knows of a run (or a leaderboard
what it knows of its #1), runs asks the sections and notes registered here, which the app registers from its
AppConfig.ready (verification/apps.py). This registry is the whole contract between them for pages. A dump's
sections have a registry of the same kind (runs/dump_sections.py); the URLs such an app serves under runs'
namespace are composed in kernelindex/urls.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, PermissionsMixin

from records.schema import WorkloadSpec
from runs.models import Document, Run

# The name under which a section's page context gives the rerun request whose result the run is (None for
# every other run): the run page then says the per-case results are the rerun's, not the source's.
RERUN_ORIGIN = "rerun_origin"


@dataclass(frozen=True)
class RunPageDocuments:
    """A run's documents as the run page has read them: each one's value by role, and the workload typed (it
    names the cases a result gives by uuid), so that a section reads none of them again."""

    values: Mapping[str, Any]
    workload: WorkloadSpec | None


@dataclass(frozen=True)
class RunSection:
    """A part of the run page that another app draws, and the members it adds to the run's JSON twin.

    `page` gives the names the run page's template reads, from the run, its documents and who asks (a moderator
    may be offered more); `twin` gives the members of the twin's index (records.manifest.INDEX_MEMBERS), from
    the run and its stored documents by role, as anyone may read them.
    """

    name: str
    page: Callable[[Run, RunPageDocuments, PermissionsMixin | AnonymousUser], dict[str, Any]]
    twin: Callable[[Run, Mapping[str, Document]], dict[str, Any]]


RUN_SECTIONS: dict[str, RunSection] = {}


def register_run_section(section: RunSection) -> None:
    """Add a section to every run page and twin made from now on; registering again replaces it."""
    RUN_SECTIONS[section.name] = section


def run_sections() -> list[RunSection]:
    return list(RUN_SECTIONS.values())


@dataclass(frozen=True)
class TopRunNote:
    """What another app says of a leaderboard's #1, on its row: a sentence for the page, members for the row in the
    group's JSON twin (verification: "reproduced by 1 of 2 workers" and its quorum)."""

    run: Run
    sentence: str
    twin: Mapping[str, Any]


TOP_RUN_NOTES: dict[str, Callable[[Run], TopRunNote | None]] = {}


def register_top_run_note(name: str, note: Callable[[Run], TopRunNote | None]) -> None:
    """Have `note` speak of each leaderboard's #1 from now on; registering a name again replaces it."""
    TOP_RUN_NOTES[name] = note


def top_run_note(run: Run) -> TopRunNote | None:
    """The first registered note that has something to say of this #1 (one app says it: verification)."""
    return next((said for note in TOP_RUN_NOTES.values() if (said := note(run)) is not None), None)

"""Reads that views and commands share. Every URL lookup goes through a *_or_404 helper."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter
from typing import Any

from django.db.models import FloatField, IntegerField, Q, QuerySet
from django.http import Http404

from records.canonical import is_digest, parse_json
from records.hardware import hardware_class, hardware_class_of
from records.manifest import manifest_text
from records.schema import REFERENCE_FIELDS, ROLES
from records.sources import SOURCES, SourceInfo
from runs.keyset import KeysetPage, Part, decode, read_page
from runs.models import (
    BOARD_DEMOTED,
    DEMOTED,
    ON_BOARD,
    RANKED,
    UNMEASURED,
    UNRANKED_MEASURED,
    ComparisonGroup,
    Definition,
    Document,
    ReferenceRow,
    Run,
    RunVersion,
    SourceBoard,
)
from runs.prepared import PreparedCount, Slot

EXPORT_CHUNK = 1000
CHART_POINTS = 400


def get_run_or_404(run_id: str) -> Run:
    """The one lookup every run URL goes through."""
    try:
        return Run.objects.select_related("definition", "group").get(run_id=run_id)
    except Run.DoesNotExist:
        raise Http404(f"No run {run_id!r}") from None


def get_group_or_404(key: str) -> ComparisonGroup:
    try:
        return ComparisonGroup.objects.select_related("definition").get(key=key)
    except ComparisonGroup.DoesNotExist:
        raise Http404(f"No comparison group {key!r}") from None


def get_definition_or_404(source: str, name: str) -> Definition:
    try:
        return Definition.objects.get(source=source, name=name)
    except Definition.DoesNotExist:
        raise Http404(f"No definition {name!r} from {source!r}") from None


def get_document_or_404(digest: str) -> Document:
    if not is_digest(digest):
        raise Http404("Not a document digest")
    try:
        return Document.objects.get(digest=digest)
    except Document.DoesNotExist:
        raise Http404(f"No document {digest!r}") from None


def get_source_or_404(key: str) -> SourceInfo:
    if key not in SOURCES:
        raise Http404(f"No source {key!r}")
    return SOURCES[key]


# -- documents and manifests --------------------------------------------------


def references_of(run_document: dict[str, Any]) -> dict[str, str]:
    """role -> digest for every document a run document points to."""
    spec = run_document["spec"]
    return {role: spec[name] for role, name in REFERENCE_FIELDS.items() if spec.get(name)}


def run_digests(run: Run) -> dict[str, str]:
    """role -> digest of the current version's documents; a run names no workload or implementation
    where its source published none."""
    return {
        "run": run.digest,
        "protocol": run.protocol_digest,
        "environment": run.environment_digest,
        "workload": run.workload_digest,
        "implementation": run.implementation_digest,
    }


def run_documents(run: Run) -> dict[str, Document]:
    """The current version's documents by role, in one query. Foreign references may be absent."""
    return runs_documents([run])[0]


def runs_documents(runs: list[Run]) -> list[dict[str, Document]]:
    """run_documents for each run, all in one query. A reference that names a stored document of another kind
    (a run whose implementationDigest is a protocol's) is as foreign as one to a document not stored."""
    wanted = [run_digests(run) for run in runs]
    found = Document.objects.in_bulk([d for digests in wanted for d in digests.values() if d])
    return [
        {role: found[d] for role, d in digests.items() if d in found and found[d].kind == ROLES[role]}
        for digests in wanted
    ]


def document_value(digest: str) -> dict[str, Any] | None:
    """One stored document's value; None for an empty digest or one not stored."""
    document = Document.objects.filter(digest=digest).first() if digest else None
    return document.value if document else None


def hardware_class_for(run: Run, environment: dict[str, Any] | None) -> str:
    """The class of machine a run ran on (its rerun queue): from its Environment document, else its GPU's name."""
    return hardware_class(environment["spec"]["hardware"]) if environment else hardware_class_of(run.hardware)


def run_hardware_class(run: Run) -> str:
    return hardware_class_for(run, document_value(run.environment_digest))


def runnable_definition(definition: Definition) -> dict[str, Any] | None:
    """The definition.json a rerun hands to the harness (with its reference), where one is stored."""
    workload = document_value(definition.workload_digest)
    if workload is None:
        return None
    value = (workload.get("spec") or {}).get("definition", {}).get("document")
    return value if isinstance(value, dict) else None


def run_manifest_text(run: Run, documents: dict[str, Document], index: dict[str, Any] | None = None) -> str:
    return manifest_text({role: doc.canonical for role, doc in documents.items()}, run.declared_digests, index)


def iter_version_manifests() -> Iterator[str]:
    """Every version of every run as a canonical manifest, each run's oldest version first."""
    versions: QuerySet[RunVersion] = RunVersion.objects.order_by("run_id", "imported_at", "id")
    rows = versions.values_list("digest", "declared_digests").iterator(chunk_size=EXPORT_CHUNK)
    while chunk := list(islice(rows, EXPORT_CHUNK)):
        run_texts = Document.objects.in_bulk([d for d, _ in chunk])
        references = {d: references_of(parse_json(run_texts[d].canonical)) for d, _ in chunk}
        wanted = {digest for refs in references.values() for digest in refs.values()}
        others = Document.objects.in_bulk(list(wanted))
        for run_digest, declared in chunk:
            texts = {"run": run_texts[run_digest].canonical}
            for role, digest in references[run_digest].items():
                if digest in others:
                    texts[role] = others[digest].canonical
            yield manifest_text(texts, declared)


# -- ranks ---------------------------------------------------------------------


@dataclass(frozen=True)
class Leader:
    """The first run of a group's order, as a run page links to it."""

    run_id: str
    source_rank: int | None = None


@dataclass(frozen=True)
class RankInfo:
    """A run's place in its comparison group, and which order says so."""

    position: int | None
    source_native: bool
    reason: str
    top: Leader | None

    @property
    def order_name(self) -> str:
        return "source-native comparison" if self.source_native else "KernelIndex comparison"


def uses_source_order(group: ComparisonGroup) -> bool:
    """A group is ordered as its source orders it when the source publishes an order and a board."""
    if not group.native_order:
        return False
    return group.runs.filter(ON_BOARD | BOARD_DEMOTED).exists()


def run_rank(run: Run) -> RankInfo:
    group = run.group
    if run.withdrawn_at is not None:
        return RankInfo(None, False, "Not ranked: this run was withdrawn.", None)
    if group.native_order and run.source_rank is not None:
        if _demoted(run):  # as source_order lists it: after the board's other runs, without a rank
            return RankInfo(None, True, _demoted_on_board(run), None)
        return RankInfo(run.source_rank, True, "", _top_by_source(group))
    if group.native_order and not run.on_public_board:
        return RankInfo(None, True, "Not ranked: a private submission, never on the source's public board.", None)
    position = latency_position(run)
    if position is None:
        return RankInfo(None, False, f"Not ranked: the run {run.get_status_display().lower()}.", None)
    return RankInfo(position, False, "", Leader(group.best_run_run_id) if group.best_run_run_id else None)


def _demoted_on_board(run: Run) -> str:
    why = (
        "a KernelIndex rerun did not reproduce it"
        if run.evidence == Run.Evidence.NOT_REPRODUCED
        else "it reported a time faster than physically possible"
    )
    return (
        f"Not ranked: {why}, so it is listed after the board's other runs "
        f"(rank {run.source_rank} on the source's public board)."
    )


def _top_by_source(group: ComparisonGroup) -> Leader | None:
    board = group.runs.filter(ON_BOARD).order_by("source_rank", "run_id")
    first = board.values_list("run_id", "source_rank").first()
    return Leader(*first) if first else None


# -- leaderboards ------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardPart:
    """A part of a leaderboard (runs.keyset.Part), whether its runs are numbered, and which runs it holds."""

    part: Part
    numbered: bool
    holds: Callable[[Run], bool]


def latency_order() -> tuple[LeaderboardPart, ...]:
    """KernelIndex's order of a group's runs, the one the leaderboard pages and every run's rank follow.

    Ranked runs by latency, then by run id; then the rankable runs a rerun did not reproduce or that reported a
    time below the physics floor, numbered after all the others (issues #14, #44); then the runs that cannot be
    ranked, unnumbered: those with a latency (failed or incorrect), then those without. Each part is read from
    an index of its own (runs.models: RANKED, DEMOTED, UNRANKED_MEASURED, UNMEASURED).
    """
    by_latency = ("latency_ns", "run_id")
    return (
        LeaderboardPart(Part("ranked", RANKED, by_latency), True, lambda run: run.is_rankable and not _demoted(run)),
        LeaderboardPart(Part("demoted", DEMOTED, by_latency), True, lambda run: run.is_rankable and _demoted(run)),
        LeaderboardPart(Part("unranked", UNRANKED_MEASURED, by_latency), False, lambda run: not run.is_rankable),
        LeaderboardPart(Part("unmeasured", UNMEASURED, ("run_id",)), False, lambda run: run.latency_ns is None),
    )


def _demoted(run: Run) -> bool:
    """Ranked after all the others (runs.models.RANKED_LAST): a rerun did not reproduce it, or it reported a time
    below the physics floor."""
    return run.evidence == Run.Evidence.NOT_REPRODUCED or run.faster_than_floor


def source_order() -> tuple[LeaderboardPart, ...]:
    """A source-ordered group: the runs on the source's board numbered by their rank there; then, unnumbered,
    those of them a rerun did not reproduce (still in the board's order: no run a rerun did not reproduce is
    listed above one it did not judge so), then the others in KernelIndex's order. Each part is read from an
    index of its own (runs.models: ON_BOARD, BOARD_DEMOTED)."""
    by_rank = ("source_rank", "run_id")
    on_board = LeaderboardPart(
        Part("source", ON_BOARD, by_rank), True, lambda run: run.source_rank is not None and not _demoted(run)
    )
    demoted = LeaderboardPart(
        Part("source-demoted", BOARD_DEMOTED, by_rank), False, lambda run: run.source_rank is not None
    )
    off_board = (
        LeaderboardPart(Part(f"off-{p.part.name}", p.part.where & Q(source_rank=None), p.part.keys), False, p.holds)
        for p in latency_order()
    )
    return (on_board, demoted, *off_board)


def latency_position(run: Run) -> int | None:
    """The run's number in latency_order: 1 + the numbered runs before it; runs tied on latency share it."""
    before = 0
    for entry in latency_order():
        if not entry.numbered:
            return None
        if entry.holds(run):
            return before + faster_in(entry.part, run) + 1
        # Only the ranked part comes before another numbered part; its size is kept on the group.
        before += run.group.ranked_count
    return None


def faster_in(part: Part, run: Run) -> int:
    """How many runs of `part` in the run's group are faster than it. For the ranked part of a large group the
    count starts at the group's nearest rank mark below the run (runs.figures.rank_marks), so it reads about a
    mark's span of index entries rather than every faster run."""
    assert run.latency_ns is not None
    marks = run.group.rank_marks if part.where == RANKED else []
    below = bisect_left(marks, run.latency_ns, key=itemgetter(0)) - 1  # the last mark faster than the run
    mark_latency, faster_than_mark = marks[below] if below >= 0 else (-math.inf, 0)
    count = FASTER_COUNTS[part.name](group=run.group_id, latency=run.latency_ns, mark=mark_latency)
    return int(faster_than_mark) + count


def _faster_count(part: Part) -> PreparedCount:
    """The runs of `part` in a group faster than a run, and as fast as a rank mark or slower: the run page's
    one count, its SQL written once (runs.prepared)."""

    def faster() -> QuerySet[Run]:
        return Run.objects.filter(
            part.where,
            group_id=Slot("group", IntegerField()),
            latency_ns__lt=Slot("latency", FloatField()),
            latency_ns__gte=Slot("mark", FloatField()),
        )

    return PreparedCount(Run, faster)


FASTER_COUNTS = {entry.part.name: _faster_count(entry.part) for entry in latency_order() if entry.numbered}


def leaderboard(group: ComparisonGroup, use_source_order: bool, after: str | None, size: int) -> KeysetPage:
    """A page of a group's leaderboard, after the cursor `after`; each run has its `position` (None: unnumbered)."""
    order = source_order() if use_source_order else latency_order()
    numbered = {entry.part.name for entry in order if entry.numbered}
    cursor = decode(after)
    runs = Run.objects.filter(group=group).for_lists()
    page = read_page(runs, [entry.part for entry in order], cursor, size)
    previous = (cursor.part, cursor.values[0], cursor.carried[0]) if cursor and cursor.carried else None
    for index, (run, part) in enumerate(zip(page.rows, page.parts, strict=True), start=page.start + 1):
        if part not in numbered:
            run.position = None
        elif use_source_order:
            run.position = run.source_rank
        elif previous is not None and previous[0] == part and previous[1] == run.latency_ns:
            run.position = previous[2]  # a tie shares the rank of the first of its runs, as RANK() numbers it
        else:
            run.position = index
        previous = (part, run.latency_ns, run.position)
    if page.rows:
        page.carry(page.rows[-1].position)  # the next page's first run may tie with this one
    page.total = group.run_count
    return page


def references_for(group: ComparisonGroup) -> list[ReferenceRow]:
    if group.definition_id is None:
        return []
    return list(ReferenceRow.objects.filter(definition_id=group.definition_id, hardware=group.hardware))


def board_for(group: ComparisonGroup) -> SourceBoard | None:
    definition = group.definition
    if definition is None or not group.native_order or not definition.external_id:
        return None
    return SourceBoard.objects.filter(
        source=definition.source,
        definition_external_id=definition.external_id,
        hardware=group.hardware,
        stack_version=group.harness_version,
    ).first()


def chart_latencies(group: ComparisonGroup, highlight: Run | None) -> list[tuple[str, float, str, bool]]:
    """(run id, latency, evidence level, below its physics floor) for the fastest runs of a group, plus the
    highlighted one wherever it is."""
    # The first runs of the leaderboard's numbered parts, each read from its own index in its order.
    rows: list[tuple[str, float, str, bool]] = []
    for entry in latency_order():
        if entry.numbered and len(rows) < CHART_POINTS:
            runs = Run.objects.filter(entry.part.where, group=group).order_by(*entry.part.keys)
            rows += [
                (run_id, float(ns or 0), evidence, below)
                for run_id, ns, evidence, below in runs.values_list(
                    "run_id", "latency_ns", "evidence", "faster_than_floor"
                )[: CHART_POINTS - len(rows)]
            ]
    if highlight is not None and highlight.is_rankable and all(row[0] != highlight.run_id for row in rows):
        assert highlight.latency_ns is not None
        rows.append((highlight.run_id, highlight.latency_ns, highlight.evidence, highlight.faster_than_floor))
    return rows


def group_size(run: Run) -> int:
    """How many runs its group's ranking holds, in the order the run page names: the runs with a place on
    the source's board for a source-ordered group, else the runs KernelIndex ranks by latency."""
    if run.group.native_order and run.source_rank is not None:
        return Run.objects.filter(ON_BOARD, group_id=run.group_id).count()
    # The ranked runs are counted on the group (runs.figures); those ranked after them are few, in an index of
    # their own.
    return run.group.ranked_count + Run.objects.filter(DEMOTED, group_id=run.group_id).count()

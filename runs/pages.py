"""What each public page shows: its context, read through the selectors, for a view to render.

A page and its `.json` twin are built from the same context (runs/serializers.py
shapes the JSON). Views only look up the object a URL names, call one of these
and render. Kept apart from runs/selectors.py, whose reads views, commands and
the rerun service share: these functions add what only a page needs (sentences,
charts, citations, forms) and take the request's parameters as plain values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models import F, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, QueryDict
from django.utils import timezone

from records.schema import EnvironmentSpec, ImplementationSpec, ProtocolSpec, RunSpec, WorkloadSpec
from records.sources import SourceInfo
from runs import display
from runs.charts import Mark, StripChart, latency_chart, score_chart
from runs.citations import Citation
from runs.display import format_latency as latency
from runs.extensions import RERUN_ORIGIN, RunPageDocuments, TopRunNote, run_sections, top_run_note
from runs.floors import case_floors, definition_floors
from runs.forms import RunSearchForm
from runs.keyset import KeysetPage, Part, decode, read_page
from runs.models import (
    EVIDENCE_LABELS,
    STATUS_MEANINGS,
    ComparisonGroup,
    Definition,
    Document,
    ReferenceRow,
    Run,
    SourceBoard,
)
from runs.search import COUNT_BOUND, bounded_count, newest_parts, search_parts
from runs.selectors import (
    CHART_POINTS,
    board_for,
    chart_latencies,
    group_size,
    leaderboard,
    references_for,
    run_digests,
    run_manifest_text,
    run_rank,
    runnable_definition,
    runs_documents,
    uses_source_order,
)
from runs.serializers import floor_json
from runs.tables import run_url_maker
from web.cache import fragment_stamp, release_id
from web.scopes import group_scope


def paginate(items: Any, number: str | None, per_page: int | None = None) -> Page[Any]:
    """The requested page, the first for none or a malformed number; past the last page is a 404, so that no
    number makes a page of its own (cached pages are keyed on it: web/cache.py's page_number)."""
    paginator = Paginator(items, per_page or settings.RUNS_PER_PAGE)
    try:
        return paginator.page(number or 1)
    except PageNotAnInteger:
        return paginator.page(1)
    except EmptyPage:
        raise Http404("No such page.") from None


# -- home ----------------------------------------------------------------------


def run_search(
    params: QueryDict, size: int | None = None, *, any_hardware: bool = False
) -> tuple[RunSearchForm, KeysetPage]:
    """The home page's search: the form (with its errors) and the page of runs it selects (`size` runs: the API
    takes a limit, and any hardware; pages show RUNS_PER_PAGE)."""
    form = RunSearchForm(params or None, any_hardware=any_hardware)
    if form.is_bound:
        form.is_valid()  # invalid fields are reported and left out; the valid ones still filter
    else:
        form.cleaned_data = {}
    runs = form.filter(Run.objects.listed().for_lists())
    query = (form.cleaned_data.get("q") or "").strip()
    parts = search_parts(query) if query else newest_parts()
    page = read_page(runs, parts, decode(params.get("after")), size or settings.RUNS_PER_PAGE)
    if form.is_filtered:
        page.total, page.more = list_size(page, runs, parts)
    else:
        # Every listed run: the groups keep their counts (runs.figures), so nothing is counted here.
        page.total = ComparisonGroup.objects.aggregate(total=Coalesce(Sum("run_count"), 0))["total"]
    return form, page


def list_size(page: KeysetPage, runs: QuerySet[Run], parts: list[Part]) -> tuple[int, bool]:
    """How many runs a list holds: known without a query when this page is its last, else counted up to a
    bound (runs.search.bounded_count). On a first page, the parts before its last run's were read to their
    end (runs.keyset.read_page), so their runs are the ones on the page: only the parts from there on are
    counted (a search's first page skips a count query per part it has read through)."""
    if not page.has_next:
        return page.last_index if page.rows else page.start, False
    if page.cursor is not None:
        return bounded_count(runs, parts)
    last = page.parts[-1]
    read_through = sum(1 for part in page.parts if part != last)
    names = [part.name for part in parts]
    counted, more = bounded_count(runs, parts[names.index(last) :], COUNT_BOUND - read_through)
    return read_through + counted, more


# -- the run page ----------------------------------------------------------------

# The run page's sections drawn from its documents alone (measurements, protocol, environment, files), and its
# manifest viewer (manifest_page), are kept as template fragments keyed by the run's digest (and the release), so
# that a page rendered again (after a write retired it) skips them; a day, so that fragments of runs nobody reads
# again expire.
DOCUMENT_FRAGMENT_SECONDS = 24 * 3600
T = TypeVar("T")


def once(compute: Callable[[], T]) -> Callable[[], T]:
    """A value the template computes when it first needs it (Django calls a callable variable), then reuses:
    nothing, where the fragment that shows it comes from the cache."""
    return cache(compute)


def run_page(run: Run, documents: dict[str, Document], user: PermissionsMixin | AnonymousUser) -> dict[str, Any]:
    """Everything the run page shows, from the run's documents (selectors.run_documents), with the sections
    other apps draw on it (runs/extensions.py) for the user who asks."""
    values = {role: document.value for role, document in documents.items()}
    # Each document is read through its kind's model once; the sections read these records' attributes.
    run_doc = display.read(values["run"], RunSpec)
    protocol_record = display.typed(values.get("protocol"), ProtocolSpec)
    protocol = display.spec_of(protocol_record)
    environment = display.typed(values.get("environment"), EnvironmentSpec)
    workload = display.spec_of(display.typed(values.get("workload"), WorkloadSpec))
    implementation = display.spec_of(display.typed(values.get("implementation"), ImplementationSpec))
    cases = display.case_count(run_doc, workload, run.definition.case_count if run.definition else 0)
    identity = display.implementation_rows(implementation, run.title, run.source, run.external_id)
    sections: dict[str, Any] = {}
    for section in run_sections():
        sections.update(section.page(run, RunPageDocuments(values, workload), user))
    origin = sections.get(RERUN_ORIGIN)
    rank = run_rank(run)
    return {
        "run": run,
        "rank": rank,
        "group_size": once(lambda: group_size(run)),  # shown beside a group's first run only
        "board": board_for(run.group) if rank.source_native else None,
        "status_meaning": STATUS_MEANINGS.get(run.status, ""),
        "documents": documents,
        "source_summary": display.source_native_summary(run_doc),
        "source_notes": display.source_native_notes(run_doc),
        "declared_digests": declared_digest_rows(run),
        "identity": identity,
        "workload_line": display.workload_line(cases, run.primary_statistic),
        "correctness": display.correctness_sentence(run_doc, protocol, run.evidence, by_rerun=origin is not None),
        "comparator": display.comparator_of(protocol),
        "comparator_description": display.comparator_description(protocol),
        "fragment_seconds": DOCUMENT_FRAGMENT_SECONDS,
        "release": release_id(),
        "measurements": once(lambda: display.measurements(run_doc)),
        "case_results": once(
            lambda: display.case_rows(
                run_doc.cases or [], display.workload_axes(workload), case_floors(run, values["run"]["spec"])
            )
        ),
        # A reported time below its physics floor (records.floor), said beside the primary measurement.
        "floor_breach": run.floor_breach if run.faster_than_floor else None,
        "protocol_rows": once(lambda: display.protocol_rows(protocol_record)),
        "environment_rows": once(lambda: display.environment_rows(environment)),
        "hardware": display.environment_hardware(environment.spec) if environment else run.hardware,
        "published_files": once(lambda: display.published_files(implementation)),
        "entry_point": once(lambda: display.entry_point_line(implementation)),
        "versions": list(run.versions.all()) if run.version_count > 1 else [],  # listed only if there are two
        "citation": citation(run, identity.implementation),
        # What other apps show of the run: its reruns, evidence and place in the verification queue.
        **sections,
    }


@dataclass(frozen=True)
class DeclaredDigest:
    """A document the source declared a digest for, with the digest KernelIndex computed (RFC 8785) for it."""

    role: str
    computed: str
    declared: str


def declared_digest_rows(run: Run) -> list[DeclaredDigest]:
    """Each digest the source declared (a manifest imported with --redigest), beside KernelIndex's own."""
    computed = run_digests(run)
    return [DeclaredDigest(role, computed.get(role, ""), declared) for role, declared in run.declared_digests.items()]


def manifest_page(run: Run, documents: dict[str, Document]) -> dict[str, Any]:
    """The run's canonical manifest, pretty and highlighted (kept by the run's digest, as the run page's own
    document sections are); the run page's viewer fetches it when opened."""
    return {
        "run": run,
        "documents": documents,
        "fragment_seconds": DOCUMENT_FRAGMENT_SECONDS,
        "release": release_id(),
        "manifest_pretty": once(lambda: pretty_manifest(run, documents)),
    }


def pretty_manifest(run: Run, documents: dict[str, Document]) -> str:
    return json.dumps(json.loads(run_manifest_text(run, documents)), indent=2, ensure_ascii=False)


def citation(run: Run, author: str) -> Citation:
    definition = run.definition.title if run.definition else run.title
    return Citation(
        run_id=run.run_id,
        title=f"Run {run.run_id}: {definition} on {run.hardware}",
        author=author,
        permalink=f"{settings.SITE_URL}{run.get_absolute_url()}",
        digest=run.digest,
        published=run.published_at.date(),
        accessed=timezone.now().date(),
    )


def twin_index(run: Run, documents: dict[str, Document]) -> dict[str, Any]:
    """What the run's JSON twin (and the API's copy of it) carries beside its documents
    (records.manifest.INDEX_MEMBERS): each registered section's members (runs/extensions.py), such as its
    evidence, reruns and where it stands with the verification policy."""
    index: dict[str, Any] = {}
    for section in run_sections():
        index.update(section.twin(run, documents))
    run_document = documents.get("run")
    spec = (run_document.value.get("spec") or {}) if run_document else {}
    index["floor"] = floor_json(run, case_floors(run, spec))
    return index


# -- comparison groups -------------------------------------------------------------


def group_page(group: ComparisonGroup, after: str | None, highlight_id: str) -> dict[str, Any]:
    """A group's leaderboard, its reference rows, the source's board and the charts, one run highlighted."""
    # Read before the queries: a chart drawn from data a write then changes is kept under the stamp it retired.
    chart_stamp = fragment_stamp(group_scope(group.key))
    source_order = uses_source_order(group)
    highlight = _highlighted_run(group, highlight_id)
    references = references_for(group)
    board = board_for(group)
    page = leaderboard(group, source_order, after, settings.RUNS_PER_PAGE)
    return {
        "group": group,
        "source_order": source_order,
        "page": page,
        "top_note": top_note(page.object_list),
        "references": references,
        "board": board,
        "highlight": highlight,
        # The latency chart is the same on every page of the leaderboard: kept as a fragment until a write
        # retires the group (or the site), read then instead of its 400 runs.
        "chart_stamp": chart_stamp,
        "fragment_seconds": DOCUMENT_FRAGMENT_SECONDS,
        "latency_chart": once(lambda: _latency_chart(group, highlight, references)),
        "score_chart": _score_chart(board, highlight),
    }


def top_note(runs: Iterable[Run]) -> TopRunNote | None:
    """What another app says of the leaderboard's #1, on the page that shows it (runs/extensions.py): its row says
    how many workers reproduced it."""
    first = next((run for run in runs if getattr(run, "position", None) == 1), None)
    return top_run_note(first) if first is not None else None


def _highlighted_run(group: ComparisonGroup, run_id: str) -> Run | None:
    """?run=<id> highlights a run; an id from elsewhere is ignored rather than an error."""
    if not run_id or len(run_id) > 16:
        return None
    return Run.objects.filter(group=group, run_id=run_id).first()


def _latency_chart(group: ComparisonGroup, highlight: Run | None, references: list[ReferenceRow]) -> StripChart | None:
    run_url = run_url_maker()  # one reverse() for the hundreds of links
    viewed = highlight.run_id if highlight is not None else ""
    marks = [
        _latency_mark(run_id, ns, evidence, run_url(run_id), run_id == viewed, below_floor=below)
        for run_id, ns, evidence, below in chart_latencies(group, highlight)
    ]
    lines = [(ref.kind, ref.get_kind_display(), ref.latency_ns) for ref in references]
    shown = "the fastest ranked runs" if len(marks) >= CHART_POINTS else "every ranked run"
    return latency_chart(f"Latency of {shown} in the group", marks, lines)


def _latency_mark(run_id: str, ns: float, evidence: str, href: str, viewed: bool, *, below_floor: bool = False) -> Mark:
    """A run on the latency chart; one a rerun did not reproduce says so in its label and its shape, one below
    its physics floor in its label."""
    disputed = evidence == Run.Evidence.NOT_REPRODUCED
    label = f"{run_id}: {latency(ns)}" + (f" ({EVIDENCE_LABELS[evidence]})" if disputed else "")
    label += " (faster than physically possible)" if below_floor else ""
    return Mark(ns, label, href, viewed, not_reproduced=disputed)


def _score_chart(board: SourceBoard | None, highlight: Run | None) -> StripChart | None:
    if board is None:
        return None
    marks = [Mark(score, f"board entry: SOL {display.format_score(score)}") for score in board.scores]
    if highlight is not None and highlight.source_score is not None:
        marks.append(
            Mark(
                highlight.source_score,
                f"{highlight.run_id}: SOL {display.format_score(highlight.source_score)}",
                highlight.get_absolute_url(),
                True,
            )
        )
    return score_chart("SOL scores on the source's public board", marks)


# -- definitions and sources -------------------------------------------------------

DEFINITIONS_PER_PAGE = 60


def definition_page(definition: Definition) -> dict[str, Any]:
    """A definition: its cases with the reference rows' per-case figures, its groups, its runnable reference."""
    references = list(definition.references.all())
    cases = list(definition.cases.all())
    for case in cases:
        case.references = {  # type: ignore[attr-defined]
            f"{ref.get_kind_display()} ({ref.hardware})": ref.per_case_ns[case.index]
            for ref in references
            if case.index < len(ref.per_case_ns)
        }
    # One row per group: its figures are kept on it (runs.figures), the best latency among its ranked runs.
    # The best run comes along: its statistic and evidence level stand beside the best latency.
    groups = list(
        definition.groups.select_related("best_run")
        .annotate(best_latency=F("best_latency_ns"))
        .order_by("hardware", "harness", "harness_version", "-run_count")
    )
    reference_columns = sorted({f"{ref.get_kind_display()} ({ref.hardware})" for ref in references})
    # Each case's physics floor (records.floor) on each GPU the page names, beside its SOL bound and baseline.
    floors = definition_floors(
        definition, cases, references, [ref.hardware for ref in references] + [group.hardware for group in groups]
    )
    for position, case in enumerate(cases):
        case.floors = {  # type: ignore[attr-defined]
            product: floor.floor_ns for product, per_case in floors.items() if (floor := per_case[position])
        }
    runnable = runnable_definition(definition)
    reference = runnable.get("reference") if runnable else None
    return {
        "definition": definition,
        "reference_code": reference if isinstance(reference, str) and reference else "",
        "custom_inputs_entrypoint": (runnable or {}).get("custom_inputs_entrypoint") or "",
        "cases": cases,
        "references": references,
        "reference_columns": reference_columns,
        "floor_columns": list(floors),
        "groups": groups,
    }


def source_page(
    source: SourceInfo, after: str | None, definitions_page: str | None = None, show_empty: bool = False
) -> dict[str, Any]:
    """A source's runs, newest first, and its definitions, most runs first: those without runs only on asking."""
    runs = Run.objects.listed().filter(source=source.key).for_lists()
    page = read_page(runs, newest_parts(), decode(after), settings.RUNS_PER_PAGE)
    page.total, page.more = list_size(page, runs, newest_parts())
    # A definition's runs are the sum of its groups' kept counts (runs.figures), not a count of runs.
    definitions = Definition.objects.filter(source=source.key).annotate(run_count=Coalesce(Sum("groups__run_count"), 0))
    with_runs = definitions.filter(run_count__gt=0)
    return {
        "source": source,
        "page": page,
        "definition_count": definitions.count(),
        "definitions_with_runs": with_runs.count(),
        "show_empty": show_empty,
        "definitions": paginate(
            (definitions if show_empty else with_runs).order_by("-run_count", "name"),
            definitions_page,
            DEFINITIONS_PER_PAGE,
        ),
    }


# -- compare -----------------------------------------------------------------------


def compare_page(a: Run, b: Run) -> dict[str, Any]:
    """Two runs side by side: the latency ratio, why they are not comparable, and how their documents differ."""
    documents_a, documents_b = runs_documents([a, b])
    differences = [
        (role, display.differences(_value(documents_a, role), _value(documents_b, role)))
        for role in ("workload", "protocol", "environment", "implementation")
    ]
    metrics_a = display.native_metrics(display.spec_of(display.typed(_value(documents_a, "run"), RunSpec)))
    metrics_b = display.native_metrics(display.spec_of(display.typed(_value(documents_b, "run"), RunSpec)))
    ratio = b.latency_ns / a.latency_ns if a.latency_ns and b.latency_ns else None
    return {
        "a": a,
        "b": b,
        "ratio": ratio,
        "ratio_sentence": display.ratio_sentence(a.run_id, b.run_id, ratio) if ratio else "",
        "same_group": a.group_id == b.group_id,
        # A ratio of figures a rerun contradicted is headlined only with that said beside it.
        "not_reproduced": [run for run in (a, b) if run.evidence == Run.Evidence.NOT_REPRODUCED],
        # Likewise a figure below the physics floor (records.floor).
        "below_floor": [run for run in (a, b) if run.faster_than_floor],
        "reasons": [] if a.group_id == b.group_id else display.comparability_reasons(a.group, b.group),
        "metrics": [
            (name, metrics_a.get(name), metrics_b.get(name)) for name in sorted(metrics_a.keys() | metrics_b.keys())
        ],
        "differences": differences,
    }


def _value(documents: dict[str, Document], role: str) -> dict[str, Any] | None:
    document = documents.get(role)
    return document.value if document else None

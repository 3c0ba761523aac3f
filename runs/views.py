"""Public pages. Each has a `.json` twin built from the same query."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from records.rerun import EVIDENCE_RULE
from records.sources import SourceInfo
from records.sources.hardware import hardware_class, hardware_class_of
from runs import display
from runs.charts import Mark, StripChart, latency_chart, score_chart
from runs.citations import Citation
from runs.forms import CompareForm, RerunForm, RunSearchForm
from runs.models import ComparisonGroup, Definition, Document, Run
from runs.reruns import RerunRefusedError, request_rerun
from runs.selectors import (
    CHART_POINTS,
    LISTS,
    board_for,
    chart_latencies,
    evidence_history,
    get_definition_or_404,
    get_document_or_404,
    get_group_or_404,
    get_run_or_404,
    get_source_or_404,
    leaderboard,
    references_for,
    rerun_rows,
    run_documents,
    run_manifest_text,
    run_rank,
    run_scopes,
    runnable_definition,
    uses_source_order,
)
from runs.serializers import evidence_json, rerun_json
from runs.templatetags.kernelindex import latency
from web.cache import add_page_scopes, cached_page
from web.http import HtmxHttpRequest

JSON_CONTENT_TYPE = "application/json"
# The cache scope of the pages that list runs (web/cache.py): home, index.json, sources, compare.
SEARCH_PARAMS = ("q", "source", "gpu", "evidence", "page")


def _page(request: HttpRequest, items: Any, per_page: int | None = None) -> Page[Any]:
    """The requested page; a malformed or out-of-range number gets the nearest real page."""
    return Paginator(items, per_page or settings.RUNS_PER_PAGE).get_page(request.GET.get("page"))


def _pagination_json(request: HttpRequest, page: Page[Any]) -> dict[str, Any]:
    def link(number: int) -> str:
        query = request.GET.copy()
        query["page"] = str(number)
        return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")

    return {
        "count": page.paginator.count,
        "page": page.number,
        "pages": page.paginator.num_pages,
        "next": link(page.next_page_number()) if page.has_next() else None,
        "previous": link(page.previous_page_number()) if page.has_previous() else None,
    }


def run_summary(run: Run, position: int | None = None) -> dict[str, Any]:
    """A run as list pages serve it in JSON."""
    summary = {
        "runId": run.run_id,
        "url": run.get_absolute_url(),
        "source": run.source,
        "externalId": run.external_id,
        "digest": run.digest,
        "definition": run.definition.name if run.definition else None,
        "implementation": run.implementation_name,
        "hardware": run.hardware,
        "status": run.status,
        "evidence": run.evidence,
        "primaryStatistic": run.primary_statistic,
        "latencyNs": run.latency_ns,
        "sourceScore": run.source_score,
        "observedAt": run.observed_at.isoformat() if run.observed_at else None,
        "publishedAt": run.published_at.isoformat(),
    }
    if position is not None or hasattr(run, "position"):
        summary["rank"] = position
    return summary


# -- health check ----------------------------------------------------------------


@require_safe
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """For a load balancer: the app answers. It touches neither the database nor the cache, so a slow
    database makes pages slow but never takes every server out of rotation at once."""
    return HttpResponse("ok", content_type="text/plain")


# -- home ----------------------------------------------------------------------


@require_safe
@vary_on_headers("HX-Request")
@cached_page(params=SEARCH_PARAMS, scopes=lambda: [LISTS])
def home(request: HtmxHttpRequest) -> HttpResponse:
    form, page = _search(request)
    status = 400 if form.errors else 200
    template = "runs/home.html#results" if request.htmx else "runs/home.html"
    return render(request, template, {"form": form, "page": page}, status=status)


@require_safe
@cached_page(params=SEARCH_PARAMS, scopes=lambda: [LISTS])
def home_json(request: HttpRequest) -> JsonResponse:
    form, page = _search(request)
    return JsonResponse(
        {
            **_pagination_json(request, page),
            "filters": {name: value for name, value in form.cleaned_data.items() if value},
            "errors": {name: [str(e) for e in errors] for name, errors in form.errors.items()},
            "runs": [run_summary(run) for run in page.object_list],
        },
        status=400 if form.errors else 200,
    )


def _search(request: HttpRequest) -> tuple[RunSearchForm, Page[Any]]:
    form = RunSearchForm(request.GET or None)
    if form.is_bound:
        form.is_valid()  # invalid fields are reported and left out; the valid ones still filter
    else:
        form.cleaned_data = {}
    runs = form.filter(Run.objects.listed().newest_first().select_related("definition"))
    return form, _page(request, runs)


# -- the run page ------------------------------------------------------------------


@require_safe
@cached_page(scopes=lambda run_id: [f"run:{run_id}"])
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = get_run_or_404(run_id)
    # The page shows the run's rank and its group's #1.
    add_page_scopes(request, *run_scopes(run))
    documents = run_documents(run)
    values = {role: document.value for role, document in documents.items()}
    context = _run_context(request, run, documents, values)
    context.update(_reruns_context(request, run, values.get("environment")))
    return TemplateResponse(request, "runs/run_detail.html", context)


def _reruns_context(request: HttpRequest, run: Run, environment: dict[str, Any] | None) -> dict[str, Any]:
    own_class = hardware_class(environment["spec"]["hardware"]) if environment else hardware_class_of(run.hardware)
    reruns = rerun_rows(run, own_class)
    may_request = request.user.has_perm("runs.request_rerun")
    return {
        "reruns": reruns,
        "active_rerun": next((row.request for row in reruns if row.request.is_active), None),
        "evidence_history": evidence_history(run),
        "evidence_rule": EVIDENCE_RULE.format(tolerance=f"±{settings.RERUN_TOLERANCE:.0%}"),
        "own_class": own_class,
        "rerun_form": RerunForm(initial={"hardware": own_class}) if may_request and not run.withdrawn_at else None,
    }


@require_safe
@never_cache
def run_reruns(request: HttpRequest, run_id: str) -> HttpResponse:
    """The reruns section alone, which the run page polls while a rerun is queued or running."""
    run = get_run_or_404(run_id)
    environment = Document.objects.filter(digest=run.environment_digest).first()
    context = {"run": run, "oob": True, **_reruns_context(request, run, environment.value if environment else None)}
    return TemplateResponse(request, "runs/_reruns.html#reruns", context)


@require_POST
def request_rerun_view(request: HttpRequest, run_id: str) -> HttpResponse:
    """A moderator's button on the run page; everyone else gets 403, whatever they post."""
    run = get_run_or_404(run_id)
    if not request.user.has_perm("runs.request_rerun"):
        raise PermissionDenied("Requesting a rerun needs the rerun permission.")
    form = RerunForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not queued: {form.errors.as_text()}", extra_tags="reruns")
    else:
        try:
            rerun = request_rerun(
                run, user=request.user, hardware=form.cleaned_data["hardware"], reason=form.cleaned_data["reason"]
            )
        except RerunRefusedError as refusal:
            messages.error(request, f"Not queued: {refusal}.", extra_tags="reruns")
        else:
            messages.success(request, f"Rerun #{rerun.pk} queued on {rerun.queue}.", extra_tags="reruns")
    return redirect(run.get_absolute_url() + "#reruns")


def _run_context(
    request: HttpRequest, run: Run, documents: dict[str, Document], values: dict[str, Any]
) -> dict[str, Any]:
    from attestations.selectors import approved_attestations

    run_doc, protocol, environment = values["run"], values.get("protocol", {}), values.get("environment", {})
    workload, implementation = values.get("workload"), values.get("implementation")
    cases = display.case_count(run_doc, workload, run.definition.case_count if run.definition else 0)
    manifest = run_manifest_text(run, documents)
    return {
        "run": run,
        "rank": run_rank(run),
        "documents": documents,
        "source_summary": display.source_native_summary(run_doc),
        "identity": display.implementation_rows(implementation, run.title, run.source, run.external_id),
        "workload_line": display.workload_line(cases, run.primary_statistic),
        "correctness": display.correctness_sentence(run_doc, protocol, run.evidence),
        "comparator": (display.spec_of(protocol).get("correctness") or {}).get("comparator", ""),
        "comparator_description": display.comparator_description(protocol),
        "measurements": display.measurements(run_doc),
        "case_results": display.spec_of(run_doc).get("cases") or [],
        "protocol_rows": display.protocol_rows(protocol),
        "environment_rows": display.environment_rows(environment),
        "artifacts": display.artifacts(implementation),
        "entry_point": display.entry_point_line(implementation),
        "versions": list(run.versions.all()),
        "manifest_pretty": json.dumps(json.loads(manifest), indent=2, ensure_ascii=False),
        "citation": _citation(
            request,
            run,
            display.implementation_rows(implementation, run.title, run.source, run.external_id)["implementation"],
        ),
        "attestations": approved_attestations(run),
    }


def _citation(request: HttpRequest, run: Run, author: str) -> Citation:
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


@require_safe
@cached_page(scopes=lambda run_id: [f"run:{run_id}"])
def run_json(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's canonical manifest, each document byte for byte the form its digest is computed on,
    with the run's evidence level and reruns beside them (records.manifest.INDEX_MEMBERS)."""
    run = get_run_or_404(run_id)
    documents = run_documents(run)
    environment = documents.get("environment")
    reruns = _reruns_context(request, run, environment.value if environment else None)
    index = {
        "evidence": evidence_json(run, reruns["evidence_rule"], reruns["evidence_history"]),
        "reruns": [rerun_json(row) for row in reruns["reruns"]],
    }
    response = HttpResponse(run_manifest_text(run, documents, index), content_type=JSON_CONTENT_TYPE)
    response["Content-Disposition"] = f'inline; filename="run-{run.run_id}.manifest.json"'
    return response


@require_safe
@cached_page()
def document_json(request: HttpRequest, digest: str) -> HttpResponse:
    """Any stored document, in the exact canonical form its digest covers."""
    return HttpResponse(get_document_or_404(digest).canonical, content_type=JSON_CONTENT_TYPE)


# -- comparison groups -------------------------------------------------------------


@require_safe
@vary_on_headers("HX-Request")
@cached_page(params=("page", "run"), scopes=lambda key: [f"group:{key}"])
def group_detail(request: HtmxHttpRequest, key: str) -> HttpResponse:
    context = _group_context(request, get_group_or_404(key))
    template = "runs/group_detail.html#leaderboard" if request.htmx else "runs/group_detail.html"
    return TemplateResponse(request, template, context)


@require_safe
@cached_page(params=("page", "run"), scopes=lambda key: [f"group:{key}"])
def group_json(request: HttpRequest, key: str) -> JsonResponse:
    context = _group_context(request, get_group_or_404(key))
    group: ComparisonGroup = context["group"]
    board = context["board"]
    return JsonResponse(
        {
            "key": group.key,
            "definition": group.definition.name if group.definition else None,
            "hardware": group.hardware,
            "architecture": group.architecture,
            "comparabilityFamily": group.family,
            "harness": group.harness,
            "harnessVersion": group.harness_version,
            "order": "source-native" if context["source_order"] else "latency",
            "references": [
                {"kind": ref.kind, "label": ref.get_kind_display(), "latencyNs": ref.latency_ns}
                for ref in context["references"]
            ],
            "board": {"scores": board.scores, "topScore": board.top_score, "topUser": board.top_user}
            if board
            else None,
            **_pagination_json(request, context["page"]),
            "runs": [run_summary(run, run.position) for run in context["page"].object_list],
        }
    )


def _group_context(request: HttpRequest, group: ComparisonGroup) -> dict[str, Any]:
    source_order = uses_source_order(group)
    page = _page(request, leaderboard(group, source_order))
    highlight = _highlighted_run(request, group)
    references = references_for(group)
    board = board_for(group)
    return {
        "group": group,
        "source_order": source_order,
        "page": page,
        "references": references,
        "board": board,
        "highlight": highlight,
        "latency_chart": _latency_chart(group, highlight, references),
        "score_chart": _score_chart(board, highlight),
    }


def _highlighted_run(request: HttpRequest, group: ComparisonGroup) -> Run | None:
    """?run=<id> highlights a run; an id from elsewhere is ignored rather than an error."""
    run_id = request.GET.get("run", "")
    if not run_id or len(run_id) > 16:
        return None
    return Run.objects.filter(group=group, run_id=run_id).first()


def _latency_chart(group: ComparisonGroup, highlight: Run | None, references: list[Any]) -> StripChart | None:
    # One reverse() for the hundreds of links: run ids are hex digits, which fill the pattern as they are.
    run_url = reverse("runs:detail", args=["RUN_ID"])
    marks = [
        Mark(
            ns,
            f"{run_id}: {latency(ns)}",
            run_url.replace("RUN_ID", run_id),
            highlight is not None and run_id == highlight.run_id,
        )
        for run_id, ns in chart_latencies(group, highlight)
    ]
    lines = [(ref.kind, ref.get_kind_display(), ref.latency_ns) for ref in references]
    shown = "the fastest ranked runs" if len(marks) >= CHART_POINTS else "every ranked run"
    return latency_chart(f"Latency of {shown} in the group", marks, lines)


def _score_chart(board: Any, highlight: Run | None) -> StripChart | None:
    if board is None:
        return None
    marks = [Mark(score, f"board entry: SOL {score:.4f}") for score in board.scores]
    if highlight is not None and highlight.source_score is not None:
        marks.append(
            Mark(
                highlight.source_score,
                f"{highlight.run_id}: SOL {highlight.source_score:.4f}",
                highlight.get_absolute_url(),
                True,
            )
        )
    return score_chart("SOL scores on the source's public board", marks)


# -- definitions and sources -------------------------------------------------------


@require_safe
@cached_page(scopes=lambda source, name: [f"definition:{source}/{name}"])
def definition_detail(request: HttpRequest, source: str, name: str) -> HttpResponse:
    return render(request, "runs/definition_detail.html", _definition_context(get_definition_or_404(source, name)))


@require_safe
@cached_page(scopes=lambda source, name: [f"definition:{source}/{name}"])
def definition_json(request: HttpRequest, source: str, name: str) -> JsonResponse:
    context = _definition_context(get_definition_or_404(source, name))
    definition: Definition = context["definition"]
    return JsonResponse(
        {
            "source": definition.source,
            "name": definition.name,
            "externalId": definition.external_id,
            "title": definition.title,
            "description": definition.description,
            "subset": definition.subset,
            "axes": definition.axes,
            "inputs": definition.inputs,
            "outputs": definition.outputs,
            "cases": [
                {
                    "index": case.index,
                    "uuid": case.uuid,
                    "axes": case.axes,
                    "tolerance": case.tolerance,
                    "references": case.references,
                }
                for case in context["cases"]
            ],
            "groups": [
                {
                    "key": group.key,
                    "url": group.get_absolute_url(),
                    "hardware": group.hardware,
                    "harness": group.harness,
                    "harnessVersion": group.harness_version,
                    "comparabilityFamily": group.family,
                    "runs": group.run_count,
                    "bestLatencyNs": group.best_latency,
                }
                for group in context["groups"]
            ],
        }
    )


def _definition_context(definition: Definition) -> dict[str, Any]:
    references = list(definition.references.all())
    cases = list(definition.cases.all())
    for case in cases:
        case.references = {  # type: ignore[attr-defined]
            f"{ref.get_kind_display()} ({ref.hardware})": ref.per_case_ns[case.index]
            for ref in references
            if case.index < len(ref.per_case_ns)
        }
    groups = definition.groups.annotate(run_count=Count("runs"), best_latency=Min("runs__latency_ns")).order_by(
        "hardware", "harness", "harness_version", "-run_count"
    )
    reference_columns = sorted({f"{ref.get_kind_display()} ({ref.hardware})" for ref in references})
    runnable = runnable_definition(definition)
    reference = runnable.get("reference") if runnable else None
    return {
        "definition": definition,
        "reference_code": reference if isinstance(reference, str) and reference else "",
        "custom_inputs_entrypoint": (runnable or {}).get("custom_inputs_entrypoint") or "",
        "cases": cases,
        "references": references,
        "reference_columns": reference_columns,
        "groups": list(groups),
    }


@require_safe
@cached_page(params=("page",), scopes=lambda key: [LISTS])
def source_detail(request: HttpRequest, key: str) -> HttpResponse:
    return render(request, "runs/source_detail.html", _source_context(request, get_source_or_404(key)))


@require_safe
@cached_page(params=("page",), scopes=lambda key: [LISTS])
def source_json(request: HttpRequest, key: str) -> JsonResponse:
    context = _source_context(request, get_source_or_404(key))
    source: SourceInfo = context["source"]
    return JsonResponse(
        {
            "key": source.key,
            "title": source.title,
            "url": source.url,
            "description": source.description,
            "definitions": context["definition_count"],
            **_pagination_json(request, context["page"]),
            "runs": [run_summary(run) for run in context["page"].object_list],
        }
    )


def _source_context(request: HttpRequest, source: SourceInfo) -> dict[str, Any]:
    runs = Run.objects.listed().filter(source=source.key).newest_first().select_related("definition")
    return {
        "source": source,
        "page": _page(request, runs),
        "definition_count": Definition.objects.filter(source=source.key).count(),
        "definitions": Definition.objects.filter(source=source.key)
        .annotate(run_count=Count("runs"))
        .order_by("-run_count", "name")[:20],
    }


# -- compare -----------------------------------------------------------------------


@require_safe
def compare_form(request: HttpRequest) -> HttpResponse:
    """`/compare?a=…&b=…` (a form without JavaScript) lands on the compare page."""
    form = CompareForm(request.GET or None)
    if form.is_valid():
        return redirect("runs:compare", a=form.cleaned_data["a"].strip(), b=form.cleaned_data["b"].strip())
    return render(request, "runs/compare_form.html", {"form": form}, status=400 if form.is_bound else 200)


@require_safe
@cached_page(scopes=lambda a, b: [LISTS, f"run:{a}", f"run:{b}"])
def compare(request: HttpRequest, a: str, b: str) -> HttpResponse:
    return render(request, "runs/compare.html", _compare_context(get_run_or_404(a), get_run_or_404(b)))


@require_safe
@cached_page(scopes=lambda a, b: [LISTS, f"run:{a}", f"run:{b}"])
def compare_json(request: HttpRequest, a: str, b: str) -> JsonResponse:
    context = _compare_context(get_run_or_404(a), get_run_or_404(b))
    return JsonResponse(
        {
            "a": run_summary(context["a"]),
            "b": run_summary(context["b"]),
            "latencyRatio": context["ratio"],
            "sameComparisonGroup": context["same_group"],
            "reasons": context["reasons"],
            "metrics": [{"name": n, "a": x, "b": y} for n, x, y in context["metrics"]],
            "differences": {
                role: [{"path": p, "a": x, "b": y} for p, x, y in rows] for role, rows in context["differences"]
            },
        }
    )


def _compare_context(a: Run, b: Run) -> dict[str, Any]:
    documents = Document.objects.in_bulk(
        [
            d
            for run in (a, b)
            for d in (
                run.digest,
                run.protocol_digest,
                run.environment_digest,
                run.workload_digest,
                run.implementation_digest,
            )
            if d
        ]
    )

    def value(digest: str) -> dict[str, Any] | None:
        return documents[digest].value if digest in documents else None

    roles = (
        ("workload", a.workload_digest, b.workload_digest),
        ("protocol", a.protocol_digest, b.protocol_digest),
        ("environment", a.environment_digest, b.environment_digest),
        ("implementation", a.implementation_digest, b.implementation_digest),
    )
    differences = [(role, display.differences(value(x), value(y))) for role, x, y in roles]
    metrics_a = (display.spec_of(value(a.digest)).get("sourceNative") or {}).get("metrics") or {}
    metrics_b = (display.spec_of(value(b.digest)).get("sourceNative") or {}).get("metrics") or {}
    ratio = b.latency_ns / a.latency_ns if a.latency_ns and b.latency_ns else None
    return {
        "a": a,
        "b": b,
        "ratio": ratio,
        "ratio_sentence": display.ratio_sentence(a.run_id, b.run_id, ratio) if ratio else "",
        "same_group": a.group_id == b.group_id,
        "reasons": [] if a.group_id == b.group_id else display.comparability_reasons(a.group, b.group),
        "metrics": [
            (name, metrics_a.get(name), metrics_b.get(name)) for name in sorted(metrics_a.keys() | metrics_b.keys())
        ],
        "differences": differences,
    }

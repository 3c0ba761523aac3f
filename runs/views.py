"""Public pages. Each has a `.json` twin built from the same query.

A view looks up what its URL names, asks runs/pages.py for the page's context
(runs/serializers.py shapes a twin's JSON from it) and renders.
"""

from __future__ import annotations

from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from runs import badges, dumps, history, pages, serializers
from runs.forms import CompareForm
from runs.keyset import normal_cursor
from runs.selectors import (
    get_definition_or_404,
    get_document_or_404,
    get_group_or_404,
    get_run_or_404,
    get_source_or_404,
    run_documents,
    run_manifest_text,
)
from web import scopes
from web.cache import add_page_scopes, cached_page, one_of, page_number, text
from web.http import HtmxHttpRequest

JSON_CONTENT_TYPE = "application/json"
SVG_CONTENT_TYPE = "image/svg+xml"
# The query parameters the home page and index.json read, each in its one spelling; the page cache keys on these
# alone (web/cache.py).
SEARCH_PARAMS = {"q": text, "source": text, "gpu": text, "evidence": text, "after": normal_cursor}


# -- health check ----------------------------------------------------------------


@require_safe
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """For a load balancer: the app answers. It touches neither the database nor the cache, so a slow
    database makes pages slow but never takes every server out of rotation at once."""
    return HttpResponse("ok", content_type="text/plain")


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico wherever a page names no icon (the admin, JSON, files): send them to the
    site's icon rather than a 404 each time."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


# -- home ----------------------------------------------------------------------


@require_safe
@vary_on_headers("HX-Request")
@cached_page(scopes.LISTS_PAGE, params=SEARCH_PARAMS)
def home(request: HtmxHttpRequest) -> HttpResponse:
    form, page = pages.run_search(request.GET)
    status = 400 if form.errors else 200
    template = "runs/home.html#results" if request.htmx else "runs/home.html"
    return render(request, template, {"form": form, "page": page}, status=status)


@require_safe
@cached_page(scopes.LISTS_PAGE, params=SEARCH_PARAMS)
def home_json(request: HttpRequest) -> JsonResponse:
    form, page = pages.run_search(request.GET)
    return JsonResponse(serializers.search_json(request, form, page), status=400 if form.errors else 200)


# -- the run page ------------------------------------------------------------------


@require_safe
@cached_page(scopes.RUN)
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = get_run_or_404(run_id)
    # The page shows the run's rank and its group's #1, and its place in the verification queue.
    add_page_scopes(request, *scopes.run_page_scopes(run), scopes.VERIFICATION_PLACES)
    context = pages.run_page(run, run_documents(run), request.user)
    # A withdrawn run is gone from every ranking: 410, with the whole record below its tombstone notice.
    return TemplateResponse(request, "runs/run_detail.html", context, status=410 if run.withdrawn_at else 200)


@require_safe
@cached_page(scopes.RUN)
def run_json(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's canonical manifest, each document byte for byte the form its digest is computed on,
    with the run's evidence level and reruns beside them (records.manifest.INDEX_MEMBERS)."""
    run = get_run_or_404(run_id)
    if run.withdrawn_at is not None:
        return JsonResponse(history.tombstone_json(run), status=410)
    add_page_scopes(request, scopes.VERIFICATION)
    documents = run_documents(run)
    index = pages.twin_index(run, documents)
    response = HttpResponse(run_manifest_text(run, documents, index), content_type=JSON_CONTENT_TYPE)
    response["Content-Disposition"] = f'inline; filename="run-{run.run_id}.manifest.json"'
    return response


@require_safe
@cached_page(scopes.RUN)
def run_badge(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's evidence badge for READMEs and papers; a withdrawn run's says so, with a 410."""
    run = get_run_or_404(run_id)
    svg = badges.badge_svg(badges.evidence_badge(run))
    return HttpResponse(svg, content_type=SVG_CONTENT_TYPE, status=410 if run.withdrawn_at else 200)


@require_safe
@vary_on_headers("HX-Request")
@cached_page(scopes.RUN)
def run_manifest(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The run's manifest viewer: the run page's "Show manifest" fetches its #manifest part when first opened,
    and a visitor without JavaScript follows the link to this page."""
    run = get_run_or_404(run_id)
    template = "runs/run_manifest.html#manifest" if request.htmx else "runs/run_manifest.html"
    context = pages.manifest_page(run, run_documents(run))
    return TemplateResponse(request, template, context, status=410 if run.withdrawn_at else 200)


@require_safe
@cached_page(scopes.RUN)
def run_history(request: HttpRequest, run_id: str) -> HttpResponse:
    """Every version of the run, every change of its evidence level, every withdrawal and restore."""
    return TemplateResponse(request, "runs/history.html", history.history_page(get_run_or_404(run_id)))


@require_safe
@cached_page(scopes.RUN)
def run_history_json(request: HttpRequest, run_id: str) -> JsonResponse:
    return JsonResponse(history.history_json(history.history_page(get_run_or_404(run_id))))


@require_safe
def dump_list(request: HttpRequest) -> HttpResponse:
    """The daily dumps with their files' checksums, read from DUMPS_DIR: no query, so not cached."""
    return render(request, "runs/dumps.html", {"dumps": dumps.list_dumps()})


@require_safe
def dump_file(request: HttpRequest, name: str, file: str) -> FileResponse:
    """One file of a listed dump; any other path is a 404."""
    return FileResponse(dumps.dump_file_or_404(name, file).open("rb"), as_attachment=file.endswith(".gz"))


@require_safe
@cached_page(scopes.DOCUMENT)
def document_json(request: HttpRequest, digest: str) -> HttpResponse:
    """Any stored document, in the exact canonical form its digest covers."""
    return HttpResponse(get_document_or_404(digest).canonical, content_type=JSON_CONTENT_TYPE)


# -- comparison groups -------------------------------------------------------------


@require_safe
@vary_on_headers("HX-Request")
@cached_page(scopes.GROUP, params={"after": normal_cursor, "run": text})
def group_detail(request: HtmxHttpRequest, key: str) -> HttpResponse:
    context = pages.group_page(get_group_or_404(key), request.GET.get("after"), request.GET.get("run", ""))
    template = "runs/group_detail.html#leaderboard" if request.htmx else "runs/group_detail.html"
    return TemplateResponse(request, template, context)


@require_safe
@cached_page(scopes.GROUP, params={"after": normal_cursor, "run": text})
def group_json(request: HttpRequest, key: str) -> JsonResponse:
    context = pages.group_page(get_group_or_404(key), request.GET.get("after"), request.GET.get("run", ""))
    return JsonResponse(serializers.group_json(request, context))


# -- definitions and sources -------------------------------------------------------


@require_safe
@cached_page(scopes.DEFINITION)
def definition_detail(request: HttpRequest, source: str, name: str) -> HttpResponse:
    return render(request, "runs/definition_detail.html", pages.definition_page(get_definition_or_404(source, name)))


@require_safe
@cached_page(scopes.DEFINITION)
def definition_json(request: HttpRequest, source: str, name: str) -> JsonResponse:
    context = pages.definition_page(get_definition_or_404(source, name))
    return JsonResponse(serializers.definition_json(context))


@require_safe
@cached_page(scopes.SOURCE, params={"after": normal_cursor, "definitions_page": page_number, "empty": one_of("shown")})
def source_detail(request: HttpRequest, key: str) -> HttpResponse:
    """?definitions_page pages the definitions; ?empty=shown lists those without runs too (a link, no script)."""
    context = pages.source_page(
        get_source_or_404(key),
        request.GET.get("after"),
        request.GET.get("definitions_page"),
        show_empty=request.GET.get("empty") == "shown",
    )
    return render(request, "runs/source_detail.html", context)


@require_safe
@cached_page(scopes.SOURCE, params={"after": normal_cursor})
def source_json(request: HttpRequest, key: str) -> JsonResponse:
    context = pages.source_page(get_source_or_404(key), request.GET.get("after"))
    return JsonResponse(serializers.source_json(request, context))


# -- compare -----------------------------------------------------------------------


@require_safe
def compare_form(request: HttpRequest) -> HttpResponse:
    """`/compare?a=…&b=…` (a form without JavaScript) lands on the compare page."""
    form = CompareForm(request.GET or None)
    if form.is_valid():
        return redirect("runs:compare", a=form.cleaned_data["a"].strip(), b=form.cleaned_data["b"].strip())
    return render(request, "runs/compare_form.html", {"form": form}, status=400 if form.is_bound else 200)


@require_safe
@cached_page(scopes.COMPARE)
def compare(request: HttpRequest, a: str, b: str) -> HttpResponse:
    return render(request, "runs/compare.html", pages.compare_page(get_run_or_404(a), get_run_or_404(b)))


@require_safe
@cached_page(scopes.COMPARE)
def compare_json(request: HttpRequest, a: str, b: str) -> JsonResponse:
    context = pages.compare_page(get_run_or_404(a), get_run_or_404(b))
    return JsonResponse(serializers.compare_json(context))

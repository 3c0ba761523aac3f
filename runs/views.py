from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.models import Run


def _run_or_404(run_id: str) -> Run:
    try:
        return Run.objects.select_related("definition", "group").get(run_id=run_id)
    except Run.DoesNotExist:
        raise Http404(f"No run {run_id!r}") from None


def _page(request: HttpRequest, paginator: Paginator[Any]) -> Page[Any]:
    """The requested page; a malformed or out-of-range number gets the nearest real page."""
    return paginator.get_page(request.GET.get("page"))


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    runs = Run.objects.listed().newest_first().select_related("definition")
    page = _page(request, Paginator(runs, settings.RUNS_PER_PAGE))
    return render(request, "runs/home.html", {"page": page})


@require_GET
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    return render(request, "runs/run_detail.html", {"run": _run_or_404(run_id)})


@require_GET
def definition_detail(request: HttpRequest, source: str, name: str) -> HttpResponse:
    raise Http404("Definition pages are not built yet")


@require_GET
def group_detail(request: HttpRequest, key: str) -> HttpResponse:
    raise Http404("Group pages are not built yet")

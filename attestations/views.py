"""The two public forms of a run page, with and without JavaScript.

With htmx the form fragment is swapped in place, so every htmx answer is a 200:
htmx 2 swaps no 4xx response unless `htmx.config.responseHandling` says so,
and the errors would never reach the person typing. Without JavaScript the
status says what happened (422 invalid, 429 too many, 409 withdrawn run) and
the body is a small page with the form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from attestations.forms import NoteForm, ReportForm, filled_honeypot
from attestations.services import submit_attestation, submit_issue_report
from runs.models import Run
from runs.selectors import get_run_or_404
from web.http import HtmxHttpRequest
from web.ratelimit import client_key, seconds_until_allowed, take


@dataclass(frozen=True)
class PublicForm:
    """One of the run page's forms: its page (whose #form partial htmx swaps), anchor and thanks."""

    name: str
    page: str
    thanks: str
    save: Callable[[Run, Any], object]

    @property
    def message_tag(self) -> str:
        # run_sections.html shows each section's own message where the redirect lands.
        return f"attestations-{self.name}"


NOTES = PublicForm(
    name="notes",
    page="attestations/add_note.html",
    thanks="Thanks — your note will appear once a moderator approves it.",
    save=submit_attestation,
)
REPORT = PublicForm(
    name="report",
    page="attestations/report_issue.html",
    thanks="Thanks — your report went to the moderators; it is not published.",
    save=submit_issue_report,
)


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "HEAD", "POST"])
def add_note(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = get_run_or_404(run_id)
    if request.method != "POST":
        return _render(request, NOTES, run, NoteForm())
    if run.withdrawn_at is not None:
        # The template shows the tombstone notice instead of the form.
        return _render(request, NOTES, run, NoteForm(), status=409)
    return _submit(request, NOTES, run, NoteForm(request.POST))


@vary_on_headers("HX-Request")
@require_http_methods(["GET", "HEAD", "POST"])
def report_issue(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = get_run_or_404(run_id)
    if request.method != "POST":
        return _render(request, REPORT, run, ReportForm())
    return _submit(request, REPORT, run, ReportForm(request.POST))


def _submit(request: HtmxHttpRequest, spec: PublicForm, run: Run, form: NoteForm | ReportForm) -> HttpResponse:
    key = client_key(request, spec.name)
    if wait := seconds_until_allowed(key):
        return _too_many(request, spec, run, form, wait)
    if not form.is_valid():
        return _render(request, spec, run, form, status=422)
    # Counted only now, so invalid attempts cost nothing; atomically, so racing posts cannot all get in.
    if wait := take(key):
        return _too_many(request, spec, run, form, wait)
    # A bot that filled the honeypot is thanked like anyone else and learns nothing.
    if not filled_honeypot(form):
        spec.save(run, form)
    if request.htmx:
        return _render(request, spec, run, form, submitted=True)
    messages.success(request, spec.thanks, extra_tags=spec.message_tag)
    return redirect(f"{run.get_absolute_url()}#{spec.name}")


def _too_many(
    request: HtmxHttpRequest, spec: PublicForm, run: Run, form: NoteForm | ReportForm, wait: int
) -> HttpResponse:
    form.add_error(None, f"Too many submissions from your network; please try again in {math.ceil(wait / 60)} min.")
    response = _render(request, spec, run, form, status=429)
    response["Retry-After"] = str(wait)
    return response


def _render(
    request: HtmxHttpRequest,
    spec: PublicForm,
    run: Run,
    form: NoteForm | ReportForm,
    status: int = 200,
    submitted: bool = False,
) -> HttpResponse:
    template = f"{spec.page}#form" if request.htmx else spec.page
    context = {"run": run, "form": form, "submitted": submitted, "thanks": spec.thanks}
    return render(request, template, context, status=200 if request.htmx else status)

"""/verification and /verification.json: what the verification policy (verification/policy.py) has waiting, in
what order and why, what ran today, and each hardware class's budget, pause and worker; and the run page's
rerun views: the polled reruns section, a moderator's request, and a rerun's attestation."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from records.canonical import canonical_text
from runs.keyset import Cursor, KeysetPage, decode, normal_cursor
from runs.selectors import get_run_or_404
from runs.serializers import pagination_json
from runs.views import JSON_CONTENT_TYPE
from verification import harness_versions
from verification import pages as verification_pages
from verification import policy as verification
from verification.forms import RerunForm
from verification.quorum import quorum_size
from verification.reruns import SYSTEM_USERNAME, RerunRefusedError, may_request_rerun, queued_message, request_rerun
from verification.selectors import get_rerun_attestation_or_404
from web import scopes
from web.cache import cached_page

WAITING_PER_PAGE = 50


def waiting_page(queue: verification.Queue, after: str | None, size: int = WAITING_PER_PAGE) -> KeysetPage:
    """A page of the waiting list, after the run the cursor names (its place when that run has left the list)."""
    cursor = decode(after)
    start = 0
    if cursor is not None and cursor.part == "waiting":
        ids = [entry.run.run_id for entry in queue.waiting]
        start = ids.index(cursor.values[0]) + 1 if cursor.values and cursor.values[0] in ids else cursor.seen
    rows = queue.waiting[start : start + size]
    end = start + len(rows)
    following = Cursor("waiting", (rows[-1].run.run_id,), end) if rows and end < len(queue.waiting) else None
    return KeysetPage(rows, ["waiting"] * len(rows), start, following, cursor, total=len(queue.waiting))


def verification_context(request: HttpRequest) -> dict[str, Any]:
    now = timezone.now()
    queue = verification.build_queue(now)
    return {
        "now": now,
        "policy_on": verification.policy_on(),
        "page": waiting_page(queue, request.GET.get("after")),
        "classes": list(queue.classes.values()),
        "unserved": sorted(queue.unserved.items()),
        "quorum": queue.quorum,
        "quorum_size": quorum_size(),
        "ran_today": list(verification.ran_today(now)[:200]),
        "system_username": SYSTEM_USERNAME,
    }


@require_safe
@cached_page(scopes.VERIFICATION_PAGE, params={"after": normal_cursor})
def verification_page(request: HttpRequest) -> HttpResponse:
    return TemplateResponse(request, "verification/verification.html", verification_context(request))


@require_safe
@cached_page(scopes.VERIFICATION_PAGE, params={"after": normal_cursor})
def verification_json(request: HttpRequest) -> JsonResponse:
    context = verification_context(request)
    page: KeysetPage = context["page"]
    return JsonResponse(
        {
            "policy": context["policy_on"],
            "waiting": {**pagination_json(request, page), "runs": [entry.as_json() for entry in page.rows]},
            "classes": [state.as_json() for state in context["classes"]],
            "quorum": [wanted.as_json() for wanted in context["quorum"]],
            "noRegisteredWorker": [{"hardwareClass": name, "runs": count} for name, count in context["unserved"]],
            "ranToday": [
                {
                    "rerun": request.pk,
                    "runId": request.run.run_id,
                    "url": request.run.get_absolute_url(),
                    "hardwareClass": request.hardware,
                    "state": request.state,
                    "verdict": request.verdict or None,
                    "verdictLabel": request.verdict_label,
                    "harnessSeconds": request.harness_seconds,
                    "finishedAt": request.finished_at.isoformat() if request.finished_at else None,
                    "byPolicy": request.reason.startswith(verification.REASON_PREFIX),
                }
                for request in context["ran_today"]
            ],
        }
    )


# -- a run's reruns -----------------------------------------------------------------


@require_safe
@never_cache
def run_reruns(request: HttpRequest, run_id: str) -> HttpResponse:
    """The reruns section alone, which the run page polls while a rerun is queued or running."""
    context = verification_pages.reruns_fragment(
        get_run_or_404(run_id), may_request_rerun=may_request_rerun(request.user)
    )
    return TemplateResponse(request, "verification/_reruns.html#reruns", context)


@require_POST
def request_rerun_view(request: HttpRequest, run_id: str) -> HttpResponse:
    """A moderator's button on the run page; everyone else gets 403, whatever they post."""
    run = get_run_or_404(run_id)
    if not may_request_rerun(request.user):
        raise PermissionDenied("Requesting a rerun needs the rerun permission.")
    form = RerunForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(str(error) for errors in form.errors.values() for error in errors)
        messages.error(request, f"Not queued: {errors}", extra_tags="reruns")
    else:
        try:
            rerun = request_rerun(
                run, user=request.user, hardware=form.cleaned_data["hardware"], reason=form.cleaned_data["reason"]
            )
        except RerunRefusedError as refusal:
            messages.error(request, f"Not queued: {refusal}.", extra_tags="reruns")
        else:
            messages.success(request, queued_message(rerun), extra_tags="reruns")
    return redirect(run.get_absolute_url() + "#reruns")


@require_safe
def rerun_attestation(request: HttpRequest, rerun_id: int) -> HttpResponse:
    """The DSSE envelope a rerun's worker signed, as it came: check it with `python -m records.attestation verify`
    against the keys at /api/v1/workers."""
    attestation = get_rerun_attestation_or_404(rerun_id)
    response = HttpResponse(canonical_text(attestation.envelope), content_type=JSON_CONTENT_TYPE)
    response["Content-Disposition"] = f'inline; filename="rerun-{rerun_id}.attestation.json"'
    return response


# -- harness versions (verification/harness_versions.py): not cached, each is one aggregate over indexed rows -----


@require_safe
def harness_versions_page(request: HttpRequest) -> HttpResponse:
    context = {"versions": harness_versions.harness_versions()}
    return TemplateResponse(request, "verification/harness_versions.html", context)


@require_safe
def harness_versions_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"versions": [version.as_json() for version in harness_versions.harness_versions()]})


def _harness_version_or_404(hex_digest: str) -> harness_versions.HarnessVersion:
    version = harness_versions.harness_version(hex_digest)
    if version is None:
        raise Http404("No harness version with this digest was recorded or judged a rerun here.")
    return version


@require_safe
def harness_version_page(request: HttpRequest, hex_digest: str) -> HttpResponse:
    version = _harness_version_or_404(hex_digest)
    context = {"version": version, "reruns": harness_versions.reruns_judged_by(version)}
    return TemplateResponse(request, "verification/harness_version.html", context)


@require_safe
def harness_version_json(request: HttpRequest, hex_digest: str) -> JsonResponse:
    version = _harness_version_or_404(hex_digest)
    record = version.record
    return JsonResponse(
        {
            **version.as_json(),
            "hostileCases": None
            if record is None
            else {
                "recordedAt": record.recordedAt,
                "held": record.held,
                "cases": [case.model_dump(mode="json") for case in record.cases],
            },
            "rerunsListed": [
                {
                    "rerun": rerun.pk,
                    "runId": rerun.run.run_id,
                    "url": rerun.run.get_absolute_url(),
                    "hardwareClass": rerun.hardware,
                    "verdict": rerun.verdict or None,
                    "finishedAt": rerun.finished_at.isoformat() if rerun.finished_at else None,
                    "attestation": reverse("runs:rerun_attestation", args=[rerun.pk]) if rerun.attestation_id else None,
                }
                for rerun in harness_versions.reruns_judged_by(version)
            ],
        }
    )

"""/verification and /verification.json: what the verification policy (runs/verification.py) has waiting, in
what order and why, what ran today, and each hardware class's budget, pause and worker."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from runs import verification
from runs.keyset import Cursor, KeysetPage, decode, normal_cursor
from runs.quorum import quorum_size
from runs.reruns import SYSTEM_USERNAME
from runs.serializers import pagination_json
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
        "ran_today": list(verification.ran_today(now)[:200]),
        "system_username": SYSTEM_USERNAME,
        "quorum_size": quorum_size(),
    }


@require_safe
@cached_page(scopes.VERIFICATION_PAGE, params={"after": normal_cursor})
def verification_page(request: HttpRequest) -> HttpResponse:
    return TemplateResponse(request, "runs/verification.html", verification_context(request))


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

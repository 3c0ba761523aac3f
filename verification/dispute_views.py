"""/disputes, /disputes.json and /disputes/feed/: every dispute (verification/disputes.py), open and closed, newest
first, with its run, category, dates, outcome, rerun and attestation. Built from one query; what the public sees
of a report is only that (and a moderator's public summary): its text and contact are never loaded here."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_safe

from attestations.models import DisputeOutcome, IssueReport
from runs.keyset import KeysetPage, Part, decode, normal_cursor, read_page
from runs.serializers import pagination_json
from verification.disputes import OUTCOME_MEANING, outcome_words
from web import scopes
from web.cache import cached_page

PER_PAGE = 50
FEED_ENTRIES = 50
STATES = ("open", "closed")
# A run id as a filter may spell it; anything else filters nothing (and is never echoed back).
RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Only what the public may see: never the report's body or contact.
PUBLIC_FIELDS = (
    "category",
    "created_at",
    "escalated_at",
    "dispute_outcome",
    "dispute_closed_at",
    "public_summary",
    "run__run_id",
    "rerun__state",
    "rerun__verdict",
    "rerun__hardware",
    "rerun__finished_at",
    "rerun__attestation_id",
)

if TYPE_CHECKING:
    DisputeFeedBase = Feed["DisputeEvent", None]
else:
    DisputeFeedBase = Feed


def normal_state(text: str) -> str:
    return text if text in STATES else ""


def normal_run_id(text: str) -> str:
    return text if RUN_ID.fullmatch(text) else ""


PARAMS = {"after": normal_cursor, "state": normal_state, "run": normal_run_id}
# Newest first: by the time each dispute opened (a report escalated again opens anew).
NEWEST_FIRST = Part("disputes", Q(), ("escalated_at", "id"), descending=True)


def public_disputes() -> QuerySet[IssueReport]:
    return IssueReport.objects.disputes().select_related("run", "rerun").only(*PUBLIC_FIELDS)


def filtered_disputes(state: str, run_id: str) -> QuerySet[IssueReport]:
    disputes = public_disputes()
    if state == "open":
        disputes = disputes.filter(dispute_closed_at__isnull=True)
    elif state == "closed":
        disputes = disputes.filter(dispute_closed_at__isnull=False)
    if run_id:
        disputes = disputes.filter(run__run_id=run_id)
    return disputes


def disputes_context(request: HttpRequest) -> dict[str, Any]:
    state, run_id = request.GET.get("state", ""), request.GET.get("run", "")
    page = read_page(filtered_disputes(state, run_id), [NEWEST_FIRST], decode(request.GET.get("after")), PER_PAGE)
    return {"page": page, "state": state, "run_id": run_id, "states": STATES}


def attestation_url(report: IssueReport) -> str | None:
    rerun = report.rerun
    if rerun is None or rerun.attestation_id is None:
        return None
    return reverse("runs:rerun_attestation", args=[rerun.pk])


def rerun_url(report: IssueReport) -> str | None:
    return f"{report.run.get_absolute_url()}#rerun-{report.rerun_id}" if report.rerun_id else None


def dispute_json(report: IssueReport) -> dict[str, Any]:
    rerun = report.rerun
    return {
        "report": report.pk,
        "runId": report.run.run_id,
        "url": report.run.get_absolute_url(),
        "category": report.category,
        "categoryLabel": report.get_category_display(),
        "reportedAt": _iso(report.created_at),
        "openedAt": _iso(report.escalated_at),
        "state": "open" if report.dispute_is_open else "closed",
        "outcome": report.dispute_outcome or None,
        "outcomeMeaning": outcome_words(report),
        "closedAt": _iso(report.dispute_closed_at),
        "summary": report.public_summary or None,
        "rerun": None
        if rerun is None
        else {
            "id": rerun.pk,
            "url": rerun_url(report),
            "state": rerun.state,
            "verdict": rerun.verdict or None,
            "hardwareClass": rerun.hardware,
            "attestation": attestation_url(report),
        },
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@require_safe
@cached_page(scopes.DISPUTES_PAGE, params=PARAMS)
def disputes_page(request: HttpRequest) -> HttpResponse:
    return TemplateResponse(request, "verification/disputes.html", disputes_context(request))


@require_safe
@cached_page(scopes.DISPUTES_PAGE, params=PARAMS)
def disputes_json(request: HttpRequest) -> JsonResponse:
    context = disputes_context(request)
    page: KeysetPage = context["page"]
    return JsonResponse(
        {
            "filters": {"state": context["state"] or None, "run": context["run_id"] or None},
            "outcomes": {outcome.value: meaning for outcome, meaning in OUTCOME_MEANING.items()},
            **pagination_json(request, page),
            "disputes": [dispute_json(report) for report in page.rows],
        }
    )


# -- the feed: one entry when a dispute opens, one when it closes -------------------------------


@dataclass(frozen=True)
class DisputeEvent:
    report: IssueReport
    closed: bool

    @property
    def at(self) -> datetime:
        moment = self.report.dispute_closed_at if self.closed else self.report.escalated_at
        assert moment is not None  # the queries below read only the events that happened
        return moment


class DisputesFeed(DisputeFeedBase):
    feed_type = Atom1Feed
    author_name = settings.SITE_NAME
    title = "Disputes · KernelIndex"
    subtitle = "Reports that a run's numbers or correctness are wrong, each answered by a controlled rerun."

    def link(self) -> str:
        return reverse("runs:disputes")

    def items(self) -> Iterable[DisputeEvent]:
        disputes = public_disputes()
        opened = disputes.order_by("-escalated_at", "-id")[:FEED_ENTRIES]
        closed = disputes.filter(dispute_closed_at__isnull=False).order_by("-dispute_closed_at", "-id")[:FEED_ENTRIES]
        events = [DisputeEvent(report, False) for report in opened] + [DisputeEvent(report, True) for report in closed]
        return sorted(events, key=lambda event: (event.at, event.closed, event.report.pk), reverse=True)[:FEED_ENTRIES]

    def item_title(self, item: DisputeEvent) -> str:
        report = item.report
        said = f"Dispute {DisputeOutcome(report.dispute_outcome).label}" if item.closed else "Dispute opened"
        return f"{said}: {report.get_category_display()} on run {report.run.run_id}"

    def item_description(self, item: DisputeEvent) -> str:
        report = item.report
        if item.closed:
            parts = [f"{outcome_words(report).capitalize()} (rerun #{report.rerun_id})."]
            if report.public_summary:
                parts.append(report.public_summary)
            return " ".join(parts)
        return f"A report of {report.get_category_display()} is answered by rerun #{report.rerun_id}."

    def item_link(self, item: DisputeEvent) -> str:
        return f"{reverse('runs:disputes')}?run={item.report.run.run_id}#dispute-{item.report.pk}"

    def item_guid(self, item: DisputeEvent) -> str:
        what = f"{'closed' if item.closed else 'opened'}-{int(item.at.timestamp())}"
        return f"{settings.SITE_URL}{reverse('runs:disputes')}#dispute-{item.report.pk}-{what}"

    def item_pubdate(self, item: DisputeEvent) -> datetime:
        return item.at

    def item_updateddate(self, item: DisputeEvent) -> datetime:
        return item.at


disputes_feed = require_safe(cached_page(scopes.DISPUTES_PAGE)(DisputesFeed()))

"""The Atom feed of rerun verdicts: each finished controlled rerun, with what it decided.

A Django syndication Feed in Atom 1.0, wrapped in the page cache under the scope of the page it follows, as
runs' own feeds are (runs/feeds.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.db.models import F
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_safe

from runs.feeds import FEED_ENTRIES
from runs.models import EVIDENCE_LABELS, INCONCLUSIVE
from verification.models import RerunRequest
from web import scopes
from web.cache import cached_page

# Django's classes take no type parameters at run time; django-stubs' do.
if TYPE_CHECKING:
    RerunFeedBase = Feed[RerunRequest, None]
else:
    RerunFeedBase = Feed


class RerunVerdictsFeed(RerunFeedBase):
    """Each finished controlled rerun, with its verdict, newest first; entries link to the rerun run's page."""

    feed_type = Atom1Feed
    author_name = settings.SITE_NAME
    title = "Rerun verdicts · KernelIndex"
    subtitle = "Controlled reruns KernelIndex finished, and what each decided about the run it reran."

    def link(self) -> str:
        return reverse("runs:home")

    def items(self) -> Iterable[RerunRequest]:
        finished = RerunRequest.objects.filter(
            state__in=[RerunRequest.State.SUCCEEDED, RerunRequest.State.FAILED], finished_at__isnull=False
        )
        return finished.select_related("run").order_by(F("finished_at").desc(), "-id")[:FEED_ENTRIES]

    def item_title(self, item: RerunRequest) -> str:
        return f"Run {item.run.run_id}: {verdict_words(item)} (rerun #{item.pk} on {item.hardware})"

    def item_description(self, item: RerunRequest) -> str:
        parts = [item.verdict_reason or item.failure_reason or f"The rerun {item.state}."]
        if item.rule_label:
            parts.append(f"Decided by the evidence {item.rule_label}.")
        return " ".join(parts)

    def item_link(self, item: RerunRequest) -> str:
        return f"{item.run.get_absolute_url()}#reruns"

    def item_guid(self, item: RerunRequest) -> str:
        return f"{settings.SITE_URL}{reverse('runs:detail', args=[item.run.run_id])}#rerun-{item.pk}"

    def item_pubdate(self, item: RerunRequest) -> datetime | None:
        return item.finished_at

    def item_updateddate(self, item: RerunRequest) -> datetime | None:
        return item.finished_at


def verdict_words(rerun: RerunRequest) -> str:
    """The verdict as the evidence levels spell it; a finished rerun without one could not decide."""
    if rerun.verdict:
        return rerun.verdict_label
    return EVIDENCE_LABELS[INCONCLUSIVE] if rerun.state == RerunRequest.State.SUCCEEDED else f"rerun {rerun.state}"


# A verdict retires the lists' scope with its run's (verification/reruns.py), so the lists' scope is this feed's.
rerun_feed = require_safe(cached_page(scopes.LISTS_PAGE)(RerunVerdictsFeed()))

"""Atom feeds: new runs per source and per definition, and a group's new #1 (rerun verdicts: verification/feeds.py).

Each feed is a Django syndication Feed in Atom 1.0; runs/urls.py wraps each in
the page cache under the scope of the page it follows, so a feed is retired
with that page.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.http import HttpRequest
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_safe

from records.sources import SourceInfo
from runs.display import format_latency
from runs.models import RANKED_LAST, ComparisonGroup, Definition, Run, RunQuerySet
from runs.selectors import (
    get_definition_or_404,
    get_group_or_404,
    get_source_or_404,
)
from web import scopes
from web.cache import cached_page

FEED_ENTRIES = 50

# Django's classes take no type parameters at run time; django-stubs' do.
if TYPE_CHECKING:
    RunFeedBase = Feed[Run, Any]
else:
    RunFeedBase = Feed


class RunsFeed(RunFeedBase):
    """What the run feeds share: one entry per run, linked to its page, dated when KernelIndex published it."""

    feed_type = Atom1Feed
    author_name = settings.SITE_NAME

    def item_title(self, item: Run) -> str:
        figure = (
            f"{format_latency(item.latency_ns)} {item.primary_statistic}"
            if item.latency_ns is not None
            else "no latency"
        )
        return f"Run {item.run_id}: {item.implementation_name} on {item.hardware}, {figure}"

    def item_description(self, item: Run) -> str:
        definition = item.definition.title if item.definition else item.title
        level = Run.Evidence(item.evidence).label
        return f"{definition}. {item.source_title}, {item.get_status_display()}; evidence: {level}."

    def item_link(self, item: Run) -> str:
        return item.get_absolute_url()

    def item_pubdate(self, item: Run) -> datetime:
        return item.published_at

    def item_updateddate(self, item: Run) -> datetime:
        return item.updated_at


def newest(runs: RunQuerySet) -> list[Run]:
    return list(runs.listed().newest_first().select_related("definition")[:FEED_ENTRIES])


class SourceRunsFeed(RunsFeed):
    def get_object(self, request: HttpRequest, key: str) -> SourceInfo:
        return get_source_or_404(key)

    def title(self, obj: SourceInfo) -> str:
        return f"New runs from {obj.title} · KernelIndex"

    def link(self, obj: SourceInfo) -> str:
        return reverse("runs:source", args=[obj.key])

    def subtitle(self, obj: SourceInfo) -> str:
        return f"The newest runs KernelIndex indexed from {obj.title}."

    def items(self, obj: SourceInfo) -> list[Run]:
        return newest(Run.objects.filter(source=obj.key))


class DefinitionRunsFeed(RunsFeed):
    def get_object(self, request: HttpRequest, source: str, name: str) -> Definition:
        return get_definition_or_404(source, name)

    def title(self, obj: Definition) -> str:
        return f"New runs of {obj.title} · KernelIndex"

    def link(self, obj: Definition) -> str:
        return obj.get_absolute_url()

    def subtitle(self, obj: Definition) -> str:
        return f"The newest runs of {obj.title} ({obj.source_title}), on every GPU."

    def items(self, obj: Definition) -> list[Run]:
        return newest(Run.objects.filter(definition=obj))


class GroupTopFeed(RunsFeed):
    """A comparison group's new #1s.

    KernelIndex keeps no log of a group's #1, so the feed derives it from what
    it stores: it walks the group's listed, rankable runs in the order they were
    published, and a run is an entry when it beat every run published before it
    (in the group's own order: the source's score where the source ranks by one,
    higher first, among the runs on its public board; else the latency, lower
    first). It reads today's data: a run withdrawn since, or found not
    reproduced since, is left out, and the runs after it are judged without it;
    the entry's date is the day the run was published.
    """

    def get_object(self, request: HttpRequest, key: str) -> ComparisonGroup:
        return get_group_or_404(key)

    def title(self, obj: ComparisonGroup) -> str:
        return f"New #1 in {obj} · KernelIndex"

    def link(self, obj: ComparisonGroup) -> str:
        return obj.get_absolute_url()

    def subtitle(self, obj: ComparisonGroup) -> str:
        order = f"by {obj.native_order}, as its source ranks" if obj.native_order else "by latency"
        return f"Each run that took the top of this comparison group ({order}) when it was published."

    def items(self, obj: ComparisonGroup) -> list[Run]:
        leaders = top_run_changes(obj)
        return sorted(leaders, key=lambda run: (run.published_at, run.pk), reverse=True)[:FEED_ENTRIES]

    def item_title(self, item: Run) -> str:
        return f"New #1: {super().item_title(item)}"


def top_run_changes(group: ComparisonGroup) -> list[Run]:
    """The runs of a group that were its #1 when they were published, in publication order."""
    # A run a rerun did not reproduce, or one faster than physically possible, is never ranked above one that
    # was not found wanting (runs.models.RANKED_LAST): it never led.
    runs = Run.objects.rankable().filter(group=group)
    if group.native_order:
        runs = group.runs.listed().filter(on_public_board=True).exclude(source_score=None)
    runs = runs.exclude(RANKED_LAST)
    ordered = runs.order_by("published_at", "id").values_list("pk", "latency_ns", "source_score")
    leaders: list[int] = []
    best: float | None = None
    for pk, latency_ns, score in ordered.iterator(chunk_size=2000):
        # Higher scores are better; latencies lower: negate the score so that lower is better for both.
        value = (None if score is None else -score) if group.native_order else latency_ns
        if value is not None and (best is None or value < best):
            best = value
            leaders.append(pk)
    return list(Run.objects.filter(pk__in=leaders).select_related("definition"))


# -- the views, each cached under the scope of the page it follows ---------------------

source_feed = require_safe(cached_page(scopes.SOURCE)(SourceRunsFeed()))
definition_feed = require_safe(cached_page(scopes.DEFINITION)(DefinitionRunsFeed()))
group_feed = require_safe(cached_page(scopes.GROUP)(GroupTopFeed()))

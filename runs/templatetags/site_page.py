"""What the frame of every page and its lists share: the navigation's sources, links to another page of a
list, and the notices one section shows."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from django import template
from django.conf import settings
from django.contrib.messages.storage.base import Message
from django.template.loader import render_to_string
from django.urls import get_script_prefix
from django.utils.safestring import SafeString

from records.sources import SourceInfo
from records.sources import navigation_sources as _navigation_sources

register = template.Library()


@register.simple_tag(takes_context=True)
def query_with(context: dict[str, object], **changes: object) -> str:
    """The current query string with some parameters replaced (None: removed), for pagination links."""
    request = context["request"]
    query = request.GET.copy()  # type: ignore[attr-defined]
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = str(value)
    return "?" + str(query.urlencode())


@register.simple_tag
def site_frame(part: str) -> SafeString:
    """A part of templates/_frame.html: the same on every page, so rendered once per process (and URL prefix,
    which its links start with) rather than on each page. Its nine links and four static files were a tenth of
    a cold run page's template time. With DEBUG, as Django's template loader does, it is rendered each time,
    so that an edit shows at once."""
    if settings.DEBUG:
        return _render_frame_part(part)
    return _frame_part(part, get_script_prefix())


@cache
def _frame_part(part: str, script_prefix: str) -> SafeString:
    return _render_frame_part(part)


def _render_frame_part(part: str) -> SafeString:
    return SafeString(render_to_string(f"_frame.html#{part}").strip("\n"))


@register.simple_tag
def navigation_sources() -> list[SourceInfo]:
    """The sources the site's navigation names, from the one registry (records.sources.REGISTRY)."""
    return _navigation_sources()


@register.filter
def tagged(messages: Iterable[Message] | None, tag: str) -> list[Message]:
    """The messages of one section, by their extra tag, errors first: the section shows one notice."""
    mine = [message for message in messages or [] if message.extra_tags == tag]
    return sorted(mine, key=lambda message: message.level_tag != "error")

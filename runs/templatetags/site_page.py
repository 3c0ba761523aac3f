"""What the frame of every page and its lists share: the navigation's sources, links to another page of a
list, and the notices one section shows."""

from __future__ import annotations

from collections.abc import Iterable

from django import template
from django.contrib.messages.storage.base import Message

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
def navigation_sources() -> list[SourceInfo]:
    """The sources the site's navigation names, from the one registry (records.sources.REGISTRY)."""
    return _navigation_sources()


@register.filter
def tagged(messages: Iterable[Message] | None, tag: str) -> list[Message]:
    """The messages of one section, by their extra tag, errors first: the section shows one notice."""
    mine = [message for message in messages or [] if message.extra_tags == tag]
    return sorted(mine, key=lambda message: message.level_tag != "error")

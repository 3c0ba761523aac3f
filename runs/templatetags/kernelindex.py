"""Numbers as people read them: latencies in ns/µs/ms, ratios, short digests."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django import template
from django.contrib.messages.storage.base import Message
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from records.canonical import short_digest as _short_digest
from records.sources import SourceInfo
from records.sources import navigation_sources as _navigation_sources
from runs import display
from runs.highlight import highlight

register = template.Library()


@register.filter
def latency(ns: float | str | None) -> str:
    """175457 -> '175.5 µs'; 12125 -> '12.1 µs'; 2660000 -> '2.66 ms'; 850 -> '850 ns'."""
    if not isinstance(ns, (int, float)) or isinstance(ns, bool):
        return "—"  # missing values reach templates as None or ''

    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if ns < 1_000_000_000:
        ms = ns / 1_000_000
        return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


@register.filter
def times(value: float | str | None) -> str:
    """6.6 -> '6.60×'."""
    return f"{value:.2f}×" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


@register.filter
def short_digest(value: str | None, length: int = 16) -> str:
    return _short_digest(value, length) if value else ""


JSON_TOKEN = re.compile(
    r'(?P<key>"(?:[^"\\]|\\.)*"(?=\s*:))|(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)'
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)"
)


@register.filter
def json_highlight(text: str) -> SafeString:
    """Pretty JSON with keys, strings, numbers and literals wrapped in spans; everything escaped."""
    pieces: list[str] = []
    position = 0
    for match in JSON_TOKEN.finditer(text):
        pieces.append(escape(text[position : match.start()]))
        kind = match.lastgroup or "string"
        pieces.append(f'<span class="j-{kind}">{escape(match.group())}</span>')
        position = match.end()
    pieces.append(escape(text[position:]))
    return mark_safe("".join(pieces))  # every piece above is escaped


@register.filter
def source_highlight(code: str, path: str) -> SafeString:
    """Source code as escaped HTML, highlighted by the language its path names."""
    return highlight(code, path)


@register.filter
def line_count(text: str) -> int:
    return len(text.splitlines())


@register.filter
def is_text_block(value: object) -> bool:
    """A value of several lines (a source file, a reference implementation): shown as a monospace block."""
    return isinstance(value, str) and "\n" in value.strip()


@register.filter
def axes_text(axes: dict[str, object] | None) -> str:
    """{'batch_size': 4, 'max_atol': 0.027999999999999997} -> 'batch_size=4, max_atol=0.028'."""
    return display.axes_text(axes or {})


@register.filter
def shape_text(shape: object) -> str:
    """A tensor's shape as definitions give it: '[batch_size, 2048]', or 'scalar' where it has none."""
    if not isinstance(shape, list) or not shape:
        return "scalar"
    return "[" + ", ".join(display.plain_number(dimension) for dimension in shape) + "]"


@register.filter
def name_cases(text: str, axes_by_uuid: dict[str, dict[str, object]] | None) -> str:
    """A failure reason with each case's uuid replaced by its axes (runs.display.name_cases)."""
    return display.name_cases(str(text or ""), axes_by_uuid or {})


@register.simple_tag
def case_rows(cases: list[object], axes_by_uuid: dict[str, dict[str, object]] | None) -> list[display.CaseRow]:
    """A per-case table's rows from a run document's cases (runs.display.case_rows)."""
    return display.case_rows(cases or [], axes_by_uuid or {})


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

"""How pages show a run: numbers as people read them, the evidence levels', statuses' and hardware's one
spelling, digests, highlighted sources and per-case tables.

Thin filters over runs.display and runs.models, where each format and label is defined once; Python code
(feeds, badges, charts, admin) calls those directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

from records.canonical import short_digest as _short_digest
from runs import display, tables
from runs.extensions import TopRunNote
from runs.highlight import highlight, highlight_json
from runs.models import EVIDENCE_LABELS, EVIDENCE_MEANINGS, STATUS_LABELS, STATUS_MEANINGS, Run

register = template.Library()


# -- numbers -------------------------------------------------------------------------


@register.filter
def latency(ns: float | str | None) -> str:
    """175457 -> '175.5 µs' (runs.display.format_latency); a missing value -> '—'."""
    return display.format_latency(ns)


@register.filter
def times(value: float | str | None) -> str:
    """6.6 -> '6.60×' (runs.display.format_ratio); a missing value -> '—'."""
    return display.format_ratio(value)


@register.filter
def score(value: float | str | None) -> str:
    """0.32561 -> '0.3256' (runs.display.format_score); a missing value -> '—'."""
    return display.format_score(value)


@register.filter
def short_digest(value: str | None, length: int = 16) -> str:
    return _short_digest(value, length) if value else ""


@register.simple_tag
def digest(value: str) -> SafeString:
    """A digest cut short, whole on hover, with a button that copies it whole (a run page shows about ten: a
    tag rather than an included template, which cost a template lookup and a context each)."""
    whole, short = escape(value or ""), escape(short_digest(value))
    return mark_safe(
        f'<code class="digest" title="{whole}">{short}…</code>'
        f'<button type="button" class="copy" data-copy="{whole}" aria-label="Copy {whole}">Copy</button>'
    )


# -- labels --------------------------------------------------------------------------


@dataclass(frozen=True)
class LegendEntry:
    key: str
    label: str
    meaning: str


@register.filter
def evidence_label(level: str) -> str:
    """'not_reproduced' -> 'Not reproduced'; an unknown level is shown as it is stored."""
    return EVIDENCE_LABELS.get(level, level)


@register.filter
def evidence_meaning(level: str) -> str:
    return EVIDENCE_MEANINGS.get(level, "")


@register.filter
def hardware_label(product: str) -> str:
    """A run's or group's hardware as one label per class, plus the model (runs.display.hardware_label)."""
    return display.hardware_label(product or "")


@register.simple_tag
def evidence_badge(level: str) -> SafeString:
    """The level's badge, as every list shows it beside a figure (runs.tables.evidence_badge)."""
    return tables.evidence_badge(level)


@register.simple_tag
def run_rows(runs: list[Run], show_source: bool = False) -> SafeString:
    """A list of runs' table rows (runs.tables.run_rows)."""
    return tables.run_rows(runs, show_source=bool(show_source))


@register.simple_tag
def leaderboard_rows(
    runs: list[Run], source_order: bool, highlight: Run | None, top_note: TopRunNote | None = None
) -> SafeString:
    """A leaderboard page's table rows (runs.tables.leaderboard_rows), the #1's with what another app says of it."""
    sentence = top_note.sentence if top_note is not None else ""
    return tables.leaderboard_rows(runs, source_order=bool(source_order), highlight=highlight, top_note=sentence)


@register.simple_tag
def evidence_legend() -> list[LegendEntry]:
    """Every evidence level, in the order a rerun can move a run through them, with what it means."""
    return [LegendEntry(level, EVIDENCE_LABELS[level], meaning) for level, meaning in EVIDENCE_MEANINGS.items()]


@register.simple_tag
def status_legend() -> list[LegendEntry]:
    """The statuses readers confuse ('Passed' and 'Measured'), labelled as the tables label them."""
    return [LegendEntry(status, STATUS_LABELS[status], meaning) for status, meaning in STATUS_MEANINGS.items()]


# -- documents, sources and cases ----------------------------------------------------


@register.filter
def json_highlight(text: str) -> SafeString:
    """Pretty JSON with keys, strings, numbers and literals wrapped in spans (runs.highlight.highlight_json)."""
    return highlight_json(text)


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
    """'[batch_size, 2048]', or 'scalar' (runs.display.shape_text)."""
    return display.shape_text(shape)


@register.filter
def name_cases(text: str, axes_by_uuid: dict[str, dict[str, object]] | None) -> str:
    """A failure reason with each case's uuid replaced by its axes (runs.display.name_cases)."""
    return display.name_cases(str(text or ""), axes_by_uuid or {})


@register.simple_tag
def case_rows(cases: list[object], axes_by_uuid: dict[str, dict[str, object]] | None) -> list[display.CaseRow]:
    """A per-case table's rows from a run document's cases (runs.display.case_rows)."""
    return display.case_rows(cases or [], axes_by_uuid or {})

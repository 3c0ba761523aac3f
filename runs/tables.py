"""The rows of the run tables (home and search, a source's runs, a group's leaderboard) and the evidence badge,
written in Python.

A list page shows 50 rows. Drawn by the template engine, a row cost about 0.2 ms (some 29 variable lookups,
an included badge and a reverse() each): most of an uncached list page's time, the same at 10⁴ runs as at
10⁶. Here a table costs one reverse(), and each value is escaped once with the standard library's
html.escape (what django.utils.html.escape calls, without its lazy-string wrapper, which format_html
applies to every argument: about half the time of rows written with it). The tables' heads, and
everything around them, stay in the templates; the cells are the ones the templates had.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from functools import lru_cache
from html import escape

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from runs import display
from runs.models import EVIDENCE_LABELS, EVIDENCE_MEANINGS, STATUS_LABELS, Definition, Run

MISSING = "—"


def run_url_maker() -> Callable[[str], str]:
    """Run id -> the run page's path, with one reverse() for a whole table or chart: run ids are hex digits,
    which fill the URL pattern as they are."""
    pattern = reverse("runs:detail", args=["RUN_ID"])
    return lambda run_id: pattern.replace("RUN_ID", run_id)


@lru_cache(maxsize=64)  # a few levels and statuses
def evidence_badge(level: str) -> SafeString:
    """A run's evidence level as the lists show it beside every figure: its label, its meaning on hover."""
    label = escape(EVIDENCE_LABELS.get(level, level))
    return mark_safe(
        f'<span class="status status-{escape(level)} evidence-badge" '
        f'title="Evidence: {label}. {escape(EVIDENCE_MEANINGS.get(level, ""))}">'
        f'<span class="visually-hidden">Evidence: </span>{label}</span>'
    )


def run_rows(runs: Iterable[Run], *, show_source: bool) -> SafeString:
    """The rows of a list of runs (templates/runs/_run_table.html): run, definition, implementation, hardware,
    latency with its statistic, evidence, status, when observed, and the source where the list mixes them."""
    run_url = run_url_maker()
    definition_cell = _definition_cell_maker()
    rows = []
    for run in runs:
        hardware = escape(display.hardware_label(run.hardware or ""))
        cells = [
            _run_cell(run, run_url),
            definition_cell(run.definition),
            _implementation_cell(run, private_marked=False),
            f'<td class="truncate" data-label="Hardware" title="{hardware}">{hardware}</td>',
            _latency_cell(run),
            f'<td data-label="Evidence">{evidence_badge(run.evidence)}</td>',
            _status_cell(run.status),
            _observed_cell(run.observed_at),
        ]
        if show_source:
            source = escape(run.source_title)
            cells.append(f'<td class="truncate optional" data-label="Source" title="{source}">{source}</td>')
        rows.append(_row("", cells))
    return mark_safe("".join(rows))


def _leaderboard_latency_cell(run: Run) -> str:
    """The latency, and a mark where it is below the physics floor (records.floor): ranked after the others."""
    latency = escape(display.format_latency(run.latency_ns))
    if not run.faster_than_floor:
        return f'<td class="num" data-label="Latency">{latency}</td>'
    mark = '<strong class="below-floor">faster than physically possible</strong>'
    return f'<td class="num" data-label="Latency">{latency} {mark}</td>'


def leaderboard_rows(
    runs: Iterable[Run], *, source_order: bool, highlight: Run | None, top_note: str = ""
) -> SafeString:
    """A leaderboard page's rows (templates/runs/group_detail.html): rank, run, implementation, latency, the
    source's score where the group follows the source's order, evidence, status, when observed; the run being
    viewed marked current; `top_note` is what another app says of the #1 (verification: "reproduced by 1 of 2
    workers")."""
    run_url = run_url_maker()
    rows = []
    for run in runs:
        position = getattr(run, "position", None)
        cells = [
            f'<td class="num rank" data-label="Rank">{MISSING if position is None else int(position)}</td>',
            _run_cell(run, run_url),
            _implementation_cell(run, private_marked=True),
            _leaderboard_latency_cell(run),
        ]
        if source_order:
            score = escape(display.format_score(run.source_score))
            cells.append(f'<td class="num optional" data-label="SOL score">{score}</td>')
        note = f' <span class="quorum">{escape(top_note)}</span>' if top_note and position == 1 else ""
        cells += [
            f'<td data-label="Evidence">{evidence_badge(run.evidence)}{note}</td>',
            _status_cell(run.status),
            f'<td class="date optional" data-label="Observed">{_date(run.observed_at) or MISSING}</td>',
        ]
        current = highlight is not None and run.pk == highlight.pk
        attributes = f' class="{"current " if current else ""}evidence-{escape(run.evidence)}"'
        rows.append(_row(attributes + (' aria-current="true"' if current else ""), cells))
    return mark_safe("".join(rows))


def _row(attributes: str, cells: list[str]) -> str:
    return f"\n    <tr{attributes}>\n      " + "\n      ".join(cells) + "\n    </tr>"


def _run_cell(run: Run, run_url: Callable[[str], str]) -> str:
    run_id = escape(run.run_id)
    return f'<td class="key" data-label="Run"><a href="{escape(run_url(run.run_id))}"><code>{run_id}</code></a></td>'


def _implementation_cell(run: Run, *, private_marked: bool) -> str:
    name = escape(run.implementation_name)
    private = ' <span class="muted">(private)</span>' if private_marked and not run.on_public_board else ""
    return f'<td class="truncate" data-label="Implementation" title="{name}">{name}{private}</td>'


def _definition_cell_maker() -> Callable[[Definition | None], str]:
    """A definition's cell, made once per definition in a table (a list's runs share a few: one reverse each)."""
    made: dict[int, str] = {}

    def cell(definition: Definition | None) -> str:
        if definition is None:
            return f'<td class="truncate optional" data-label="Definition">{MISSING}</td>'
        if definition.pk not in made:
            title, url = escape(definition.title), escape(definition.get_absolute_url())
            link = f'<a href="{url}">{title}</a>'
            made[definition.pk] = f'<td class="truncate optional" data-label="Definition" title="{title}">{link}</td>'

        return made[definition.pk]

    return cell


def _latency_cell(run: Run) -> str:
    if run.latency_ns is None:
        return f'<td class="num" data-label="Latency">{MISSING}</td>'
    latency, statistic = escape(display.format_latency(run.latency_ns)), escape(run.primary_statistic)
    return f'<td class="num" data-label="Latency">{latency} <span class="statistic">{statistic}</span></td>'


@lru_cache(maxsize=64)  # a few levels and statuses
def _status_cell(status: str) -> str:
    label = escape(STATUS_LABELS.get(status, status))
    return f'<td class="optional" data-label="Status"><span class="status status-{escape(status)}">{label}</span></td>'


def _observed_cell(observed_at: datetime | None) -> str:
    if observed_at is None:
        return f'<td class="date optional" data-label="Observed">{MISSING}</td>'
    local = timezone.localtime(observed_at)
    return (
        f'<td class="date optional" data-label="Observed">'
        f'<time datetime="{local.isoformat()}">{_date(local)}</time></td>'
    )


def _date(value: datetime | None) -> str:
    """'2026-11-30' in the site's time zone, as the templates' `date:"Y-m-d"` wrote it."""
    return timezone.localtime(value).strftime("%Y-%m-%d") if value is not None else ""

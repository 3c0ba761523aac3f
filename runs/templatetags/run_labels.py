"""How list pages name a run's evidence level, status and hardware: one spelling, from runs.models and runs.display."""

from __future__ import annotations

from dataclasses import dataclass

from django import template

from runs.display import hardware_label as _hardware_label
from runs.models import EVIDENCE_LABELS, EVIDENCE_MEANINGS, STATUS_MEANINGS, Run

register = template.Library()


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
    return _hardware_label(product or "")


@register.simple_tag
def evidence_legend() -> list[LegendEntry]:
    """Every evidence level, in the order a rerun can move a run through them, with what it means."""
    return [LegendEntry(level, EVIDENCE_LABELS[level], meaning) for level, meaning in EVIDENCE_MEANINGS.items()]


@register.simple_tag
def status_legend() -> list[LegendEntry]:
    """The statuses readers confuse ('Passed' and 'Measured'), labelled as the tables label them."""
    labels = dict(Run.Status.choices)
    return [LegendEntry(status, labels[status], meaning) for status, meaning in STATUS_MEANINGS.items()]

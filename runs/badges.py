"""A run's evidence badge: a two-part SVG, as shields draws them, for READMEs and papers to embed.

The left part says whose badge it is, the right part the run's evidence level
and its primary figure, coloured by the level. The level's words are
Run.Evidence's labels, the figure is the run page's own latency format.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape

from runs.display import format_latency
from runs.models import Run

LABEL = "KernelIndex"
LABEL_COLOUR = "#555"
# One colour per evidence level; white text on each keeps a contrast of at least 4.5:1.
EVIDENCE_COLOURS = {
    Run.Evidence.REPORTED: "#40649c",
    Run.Evidence.REPRODUCED: "#2e7d32",
    Run.Evidence.NOT_REPRODUCED: "#c62828",
}
WITHDRAWN_COLOUR = "#767676"
HEIGHT = 20
PADDING = 6
# Average advance of 11px Verdana, the badge's font, per character; wide enough for digits and µ.
CHARACTER_WIDTH = 7.0


@dataclass(frozen=True)
class Badge:
    label: str
    message: str
    colour: str

    @property
    def title(self) -> str:
        return f"{self.label}: {self.message}"


def evidence_badge(run: Run) -> Badge:
    """What a run's badge says: its evidence level and, where it has one, its primary figure."""
    if run.withdrawn_at is not None:
        return Badge(LABEL, "withdrawn", WITHDRAWN_COLOUR)
    level = Run.Evidence(run.evidence)
    message = level.label
    if run.latency_ns is not None:
        message += f" · {format_latency(run.latency_ns)} {run.primary_statistic}"
    return Badge(LABEL, message, EVIDENCE_COLOURS[level])


def text_width(text: str) -> int:
    return round(len(text) * CHARACTER_WIDTH)


def badge_svg(badge: Badge) -> str:
    """The badge as a standalone SVG document; every text in it is XML-escaped."""
    left = text_width(badge.label) + 2 * PADDING
    right = text_width(badge.message) + 2 * PADDING
    width = left + right
    label, message, title = escape(badge.label), escape(badge.message), escape(badge.title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
        f'viewBox="0 0 {width} {HEIGHT}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        f'<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="{HEIGHT}" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)">'
        f'<rect width="{left}" height="{HEIGHT}" fill="{LABEL_COLOUR}"/>'
        f'<rect x="{left}" width="{right}" height="{HEIGHT}" fill="{badge.colour}"/>'
        f'<rect width="{width}" height="{HEIGHT}" fill="url(#s)"/></g>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{left / 2}" y="14">{label}</text>'
        f'<text x="{left + right / 2}" y="14">{message}</text></g>'
        f"</svg>"
    )

"""Server-rendered strip charts: where each run sits, with reference lines. No JavaScript."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from runs.display import format_latency

WIDTH = 720
HEIGHT = 120
MARGIN = 24
LANES = 7  # runs at nearly the same value are spread over a few lanes so each stays visible


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    label: str
    href: str
    highlighted: bool
    # A run whose figure a KernelIndex rerun did not reproduce: drawn as a cross, not a dot, so the
    # mark says it without colour.
    not_reproduced: bool = False


@dataclass(frozen=True)
class Rule:
    x: float
    label: str
    kind: str

    @property
    def anchor(self) -> str:
        """Labels near an edge grow inwards so they stay inside the picture."""
        if self.x > WIDTH - 90:
            return "end"
        return "start" if self.x < 90 else "middle"


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class StripChart:
    title: str
    points: list[Point]
    rules: list[Rule]
    ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def axis_y(self) -> int:
        return self.height - MARGIN

    @property
    def axis_start(self) -> float:
        return self.ticks[0].x if self.ticks else MARGIN

    @property
    def axis_end(self) -> float:
        return self.ticks[-1].x if self.ticks else self.width - MARGIN

    @property
    def highlighted(self) -> list[Point]:
        return [point for point in self.points if point.highlighted]

    @property
    def not_reproduced(self) -> list[Point]:
        return [point for point in self.points if point.not_reproduced]

    @property
    def points_svg(self) -> SafeString:
        """Every point as SVG, the highlighted ones last (on top, larger, not links).

        Drawn here rather than in the template: a chart has up to 400 points, and a
        template loop spent about as long on them as on the rest of the page.
        """
        others = "".join(_mark(point, 4) for point in self.points if not point.highlighted)
        return mark_safe(others + "".join(_mark(point, 7) for point in self.highlighted))


@dataclass(frozen=True)
class Mark:
    """One run to draw: its value, a label for the tooltip, where it links."""

    value: float
    label: str
    href: str = ""
    highlighted: bool = False
    not_reproduced: bool = False


def latency_chart(title: str, marks: list[Mark], references: list[tuple[str, str, float]]) -> StripChart | None:
    """Latencies on a log axis; references are (kind, label, ns) drawn as vertical rules."""
    values = [m.value for m in marks if m.value > 0] + [ns for _, _, ns in references if ns > 0]
    if not values:
        return None
    low = math.floor(math.log10(min(values)))
    high = max(math.ceil(math.log10(max(values))), low + 1)

    def place(ns: float) -> float:
        return MARGIN + (math.log10(ns) - low) / (high - low) * (WIDTH - 2 * MARGIN)

    ticks = [Tick(place(10.0**power), format_latency(10.0**power)) for power in range(low, high + 1)]
    rules = [Rule(place(ns), f"{label} {format_latency(ns)}", kind) for kind, label, ns in references if ns > 0]
    points = [_point(place(m.value), index, m) for index, m in enumerate(marks) if m.value > 0]
    return StripChart(title, points, rules, ticks)


def score_chart(title: str, marks: list[Mark]) -> StripChart:
    """Source scores on [0, 1], with the scoring baseline at 0.5 and the SOL bound at 1."""

    def place(score: float) -> float:
        return MARGIN + score * (WIDTH - 2 * MARGIN)

    ticks = [Tick(place(tenth / 10), f"{tenth / 10:.1f}") for tenth in range(0, 11, 2)]
    rules = [
        Rule(place(0.5), "scoring baseline 0.5", "scoring_baseline"),
        Rule(place(1.0), "SOL bound 1.0", "sol_bound"),
    ]
    return StripChart(title, [_point(place(m.value), index, m) for index, m in enumerate(marks)], rules, ticks)


def _point(x: float, index: int, mark: Mark) -> Point:
    lane = LANES // 2 if mark.highlighted else index % LANES
    y = MARGIN + 8 + lane * (HEIGHT - 2 * MARGIN - 16) / (LANES - 1)
    return Point(round(x, 1), round(y, 1), mark.label, mark.href, mark.highlighted, mark.not_reproduced)


def _mark(point: Point, radius: int) -> str:
    """A dot, or a cross for a run a rerun did not reproduce; the run being viewed larger, with a ring, not a link."""
    css_class = (
        "point" + (" highlighted" if point.highlighted else "") + (" not-reproduced" if point.not_reproduced else "")
    )
    title = f"<title>{escape(point.label)}</title>"
    if point.not_reproduced:
        x, y, r = point.x, point.y, radius
        path = f"M{x - r} {y - r}L{x + r} {y + r}M{x - r} {y + r}L{x + r} {y - r}"
        shape = f'<path class="{css_class}" d="{path}">{title}</path>'
    else:
        shape = f'<circle class="{css_class}" cx="{point.x}" cy="{point.y}" r="{radius}">{title}</circle>'
    if point.highlighted:
        # A ring around the viewed run, so it stands out from its neighbours by shape as well as colour.
        ring = f'<circle class="viewed-ring" cx="{point.x}" cy="{point.y}" r="{radius + 5}"/>'
        return ring + shape
    if point.href:
        return f'<a href="{escape(point.href)}">{shape}</a>'
    return shape

"""Numbers as people read them: latencies in ns/µs/ms, ratios, short digests."""

from __future__ import annotations

from django import template

from records.canonical import short_digest as _short_digest

register = template.Library()


@register.filter
def latency(ns: float | None) -> str:
    """175457 -> '175.5 µs'; 12125 -> '12.1 µs'; 2660000 -> '2.66 ms'; 850 -> '850 ns'."""
    if ns is None:
        return "—"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if ns < 1_000_000_000:
        ms = ns / 1_000_000
        return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


@register.filter
def times(value: float | None) -> str:
    """6.6 -> '6.60×'."""
    return "—" if value is None else f"{value:.2f}×"


@register.filter
def short_digest(value: str | None, length: int = 16) -> str:
    return _short_digest(value, length) if value else ""

"""Filters for the run page's attestation sections."""

from __future__ import annotations

from collections.abc import Sequence

from django import template

from attestations.models import Attestation
from attestations.selectors import count_attestations

register = template.Library()


@register.filter
def attestation_summary(attestations: Sequence[Attestation]) -> str:
    """'2 reproductions (1 reproduced, 1 not reproduced) · 1 note', from the list the page already has."""
    return count_attestations(attestations).summary

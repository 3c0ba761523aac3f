"""Harness versions: which harness judged each rerun, and what that version's own test suite found.

A version is named by its digest (harness.harness_digest, which every rerun's attested result carries and
RerunRequest.harness_digest keeps). Its hostile cases come from the record its test suite wrote
(records/harness_suites.py, shipped in harness/suites/): the versions listed are those recorded and those that
judged a rerun here, newest first. The one this site's code holds is "current": the verification policy reruns a
group's top runs again when the run's deciding rerun was judged by another (verification/policy.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db.models import Count, Max, QuerySet
from django.urls import reverse

from harness import harness_digest
from records.harness_suites import SuiteRecord, recorded_suites
from verification.models import RerunRequest

# The reruns a version's page lists, latest first; the count says how many there are in all.
RERUNS_LISTED = 100


@cache
def current_harness() -> str:
    """The digest of the harness this site's code holds (read once per process: it changes only with a deploy)."""
    return harness_digest()


@dataclass(frozen=True)
class HarnessVersion:
    digest: str
    version: str
    record: SuiteRecord | None
    reruns: int
    last_rerun_at: datetime | None

    @property
    def hex(self) -> str:
        return self.digest.removeprefix("sha256:")

    @property
    def short_digest(self) -> str:
        return f"sha256:{self.hex[:12]}"

    @property
    def current(self) -> bool:
        return self.digest == current_harness()

    def get_absolute_url(self) -> str:
        return reverse("runs:harness_version", args=[self.hex])

    def as_json(self) -> dict[str, Any]:
        record = self.record
        return {
            "version": self.version,
            "digest": self.digest,
            "url": self.get_absolute_url(),
            "current": self.current,
            "reruns": self.reruns,
            "lastRerunAt": self.last_rerun_at.isoformat() if self.last_rerun_at else None,
            "hostileCases": None
            if record is None
            else {"recordedAt": record.recordedAt, "held": record.held, "total": len(record.cases)},
        }


def _judged() -> QuerySet[RerunRequest]:
    return RerunRequest.objects.exclude(harness_digest="")


def harness_versions() -> list[HarnessVersion]:
    """Every version recorded or seen judging a rerun: the current first, then by their latest rerun."""
    records = recorded_suites()
    seen = {
        row["harness_digest"]: row
        for row in _judged()
        .order_by()
        .values("harness_digest")
        .annotate(reruns=Count("pk"), last=Max("finished_at"), version=Max("harness_version"))
    }
    versions = [_version(digest, records.get(digest), seen.get(digest)) for digest in set(records) | set(seen)]
    return sorted(versions, key=_current_then_latest)


def _current_then_latest(version: HarnessVersion) -> tuple[bool, float, str]:
    latest = version.last_rerun_at.timestamp() if version.last_rerun_at else 0.0
    return (not version.current, -latest, version.version)


def harness_version(hex_digest: str) -> HarnessVersion | None:
    """The version with this digest (its hex), or None where it was neither recorded nor judged a rerun here."""
    digest = f"sha256:{hex_digest}"
    record = recorded_suites().get(digest)
    rows = list(
        _judged()
        .filter(harness_digest=digest)
        .order_by()
        .values("harness_digest")
        .annotate(reruns=Count("pk"), last=Max("finished_at"), version=Max("harness_version"))
    )
    row = rows[0] if rows else None
    if record is None and row is None:
        return None
    return _version(digest, record, row)


def _version(digest: str, record: SuiteRecord | None, row: dict[str, Any] | None) -> HarnessVersion:
    version = record.harness.version if record else str((row or {}).get("version") or "unknown")
    reruns, last = (row["reruns"], row["last"]) if row else (0, None)
    return HarnessVersion(digest, version, record, reruns, last)


def reruns_judged_by(version: HarnessVersion) -> list[RerunRequest]:
    rows = _judged().filter(harness_digest=version.digest).select_related("run").order_by("-finished_at", "-pk")
    return list(rows[:RERUNS_LISTED])

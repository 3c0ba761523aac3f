"""The verification policy's part of the quorum: it asks another worker for the reruns a group's #1 still needs.

A run that holds #1 of its comparison group, whose current version has conclusive reruns on its own class but
whose quorum (records/quorum.py) is short ("reproduced by 1 of 2 workers") or disagrees, gets one more rerun,
requested by the system account like the policy's others and within the same budget, on a worker key that has
not voted on that version: the request names the keys it must not run on (RerunRequest.not_by_keys), the site
refuses their claim, and their workers drop its job. While no other registered key of the class could take it,
nothing is asked: /verification says it waits for another worker, so a lone worker neither bounces a job nor
spends the budget. verification.policy.apply_policy calls `ask_for_quorum` before it queues anything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef

from records.quorum import Quorum
from runs.models import ComparisonGroup, Run
from runs.selectors import run_hardware_class
from verification import quorum
from verification.models import RerunRequest
from verification.reruns import RerunRefusedError, request_rerun


@dataclass(frozen=True)
class QuorumWanted:
    """A group's #1 whose quorum needs another worker's rerun, and why it waits, where it does."""

    run: Run
    hardware_class: str
    quorum: Quorum
    avoid: tuple[str, ...]
    holdup: str = ""  # '' when a rerun can be asked for now

    def because(self) -> str:
        group = self.run.definition.name if self.run.definition else self.run.title
        return f"#1 of {group} on {self.run.group.hardware}: {self.quorum.sentence()}"

    def as_json(self) -> dict[str, Any]:
        return {
            "runId": self.run.run_id,
            "url": self.run.get_absolute_url(),
            "hardwareClass": self.hardware_class,
            "quorum": self.quorum.as_json(),
            "reason": self.because(),
            "waitsBecause": self.holdup or None,
        }


def tops_with_reruns() -> Iterable[Run]:
    """Each group's #1 with a conclusive rerun of its current version and no rerun queued or running."""
    voted = RerunRequest.objects.filter(run=OuterRef("pk"), run_digest=OuterRef("digest"), verdict__gt="")
    active = RerunRequest.objects.active().filter(run=OuterRef("pk"))
    tops = ComparisonGroup.objects.exclude(best_run=None).values("best_run_id")
    return (
        Run.objects.filter(pk__in=tops, withdrawn_at=None)
        .filter(Exists(voted))
        .exclude(Exists(active))
        .select_related("group", "definition")
        .order_by("run_id")
    )


def quorum_wanted(registered: set[str], tried_since: datetime) -> list[QuorumWanted]:
    """Every #1 whose quorum needs another worker, on the classes a key is registered for; one whose rerun of
    this version ended without deciding since `tried_since` waits, so that the budget is not spent on it every
    sweep."""
    wanted = []
    for run in tops_with_reruns():
        name = run_hardware_class(run)
        if name not in registered:
            continue
        standing = quorum.standing_of(quorum.own_class_reruns(run, name))
        if standing.decider is None or standing.decider.run_digest != run.digest or not standing.quorum.needs_another:
            continue
        avoid = standing.quorum.counted_keys
        if tried_lately(run, name, tried_since):
            holdup = f"a rerun of this version on {name} ended lately without deciding; it is asked for again later"
        else:
            holdup = "" if quorum.eligible_keys(name, avoid) else waits_for_another_key(name)
        wanted.append(QuorumWanted(run, name, standing.quorum, avoid, holdup))
    return wanted


def run_quorum_wait(run: Run, tried_since: datetime) -> str:
    """What a run page says of a #1 whose quorum needs another worker ('' for any other run)."""
    if run.group.best_run_id != run.pk:
        return ""
    name = run_hardware_class(run)
    standing = quorum.standing_of(quorum.own_class_reruns(run, name))
    if standing.decider is None or standing.decider.run_digest != run.digest or not standing.quorum.needs_another:
        return ""
    said = f"This #1 is {standing.quorum.sentence()}"
    if tried_lately(run, name, tried_since):
        return f"{said}; another worker's rerun ended lately without deciding, and is asked for again later."
    if not quorum.eligible_keys(name, standing.quorum.counted_keys):
        return f"{said}; it {waits_for_another_key(name)}."
    return f"{said}: the policy asks another worker for a rerun at its next sweep."


def tried_lately(run: Run, hardware: str, since: datetime) -> bool:
    """A rerun of the run's version on the class ended since then without a verdict (inconclusive after its
    attempts, failed, cancelled)."""
    ended = RerunRequest.objects.filter(run=run, run_digest=run.digest, hardware=hardware, finished_at__gte=since)
    return ended.filter(verdict="").exists()


def waits_for_another_key(hardware: str) -> str:
    return (
        f"waits for another worker of {hardware}: every live worker of it reran this version already with its "
        "key; a quorum needs a different one"
    )


def ask_for_quorum(entry: QuorumWanted, user: Any, reason_prefix: str) -> RerunRequest | None:
    """Ask for another worker's rerun of a #1 (the caller checked its class's budget); None where it cannot
    be asked for now."""
    if entry.holdup:
        return None
    reason = f"{reason_prefix}: {entry.because()}; a rerun by another worker"
    try:
        return request_rerun(entry.run, user=user, hardware=entry.hardware_class, reason=reason, not_by=entry.avoid)
    except RerunRefusedError:
        return None  # queued or withdrawn since it was read: the next sweep sees it

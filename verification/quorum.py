"""The quorum for the top, read from the database: the votes a run's reruns cast (records/quorum.py decides).

A vote is a conclusive rerun of the run on its own hardware class whose attestation still verifies, with the
key that signed it and the host its attested environment names. Only reruns of the run's current version vote
(the evidence rule's: verification.reruns.refresh_evidence), so a quorum never mixes versions.
Nothing here writes; verification.reruns applies the level, verification.quorum_policy asks for the missing reruns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from records.quorum import NOT_REPRODUCED, REPRODUCED, UNKNOWN_HOST, Quorum, Vote, decide, standing_votes
from runs.extensions import TopRunNote
from runs.models import Run
from runs.selectors import run_hardware_class
from verification.models import RerunRequest, RerunWorker, WorkerKey

# A rerun decided before reruns were attested has no key: all such reruns speak as one unknown worker.
UNATTESTED = "unattested"


@dataclass(frozen=True)
class Standing:
    """A run's standing conclusive reruns of the version they decide, newest first, and what they decide."""

    reruns: list[RerunRequest]
    quorum: Quorum
    # Each key's latest rerun (records.quorum.standing_votes) where it votes for the level the quorum gives: the
    # run is ranked by the median of what these measured (verification.reruns).
    agreeing: list[RerunRequest] = field(default_factory=list)

    @property
    def decider(self) -> RerunRequest | None:
        return self.reruns[0] if self.reruns else None


def quorum_size() -> int:
    return max(1, int(settings.VERIFICATION_QUORUM))


def decide_votes(votes: Iterable[Vote]) -> Quorum:
    """records.quorum.decide with this site's settings."""
    return decide(votes, quorum_size(), distinct_hosts=bool(settings.VERIFICATION_QUORUM_DISTINCT_HOSTS))


def vote_of(request: RerunRequest, order: int) -> Vote | None:
    """A conclusive rerun's vote: its verdict, its key, its attested host; None for a rerun that decided nothing
    or whose attestation no longer verifies."""
    if request.verdict not in (REPRODUCED, NOT_REPRODUCED):
        return None
    if request.attestation is None:
        return Vote(UNATTESTED, UNKNOWN_HOST, request.verdict, order)
    attested = request.attestation.verified()
    if attested is None:
        return None
    environment = (attested.result or {}).get("environment")
    host = environment.get("hostId") if isinstance(environment, dict) else None
    return Vote(request.attestation.worker_key.key_id, str(host or UNKNOWN_HOST), request.verdict, order)


def standing_of(reruns_newest_first: Sequence[RerunRequest]) -> Standing:
    """The quorum of reruns already chosen as standing (own class, verified), newest first: over the version the
    newest conclusive one reran."""
    conclusive = [(request, vote_of(request, -index)) for index, request in enumerate(reruns_newest_first)]
    voted = [(request, vote) for request, vote in conclusive if vote is not None]
    if not voted:
        return Standing([], decide_votes([]))
    version = voted[0][0].run_digest
    of_version = [(request, vote) for request, vote in voted if request.run_digest == version]
    decided = decide_votes(vote for _, vote in of_version)
    by_order = {vote.order: request for request, vote in of_version}
    standing = standing_votes(vote for _, vote in of_version)
    agreeing = [by_order[vote.order] for vote in standing if vote.level == decided.level]
    return Standing([request for request, _ in of_version], decided, agreeing)


def own_class_reruns(run: Run, hardware: str | None = None) -> list[RerunRequest]:
    """The run's reruns of its current version with a result on its own class (or `hardware`), newest first."""
    own = RerunRequest.objects.filter(
        run=run,
        run_digest=run.digest,
        hardware=hardware or run_hardware_class(run),
        result_run__isnull=False,
        verdict__gt="",
    )
    return list(own.select_related("attestation__worker_key").order_by("-finished_at", "-id"))


def run_quorum(run: Run) -> Quorum:
    """Where a run stands with the quorum, as its page, its JSON twin and its group's leaderboard say it."""
    if not run.rerun_count:  # kept by runs.figures: a run never rerun asks for nothing
        return decide_votes([])
    return standing_of(own_class_reruns(run)).quorum


def keys_to_avoid(run: Run, hardware: str) -> list[str]:
    """The keys a new rerun of the run's current version on `hardware` must not run on, for it to add to the
    quorum: those that voted, while the quorum is short or disagrees; none otherwise."""
    if hardware != run_hardware_class(run):
        return []
    standing = standing_of(own_class_reruns(run, hardware))
    decider = standing.decider
    if decider is None or decider.run_digest != run.digest or not standing.quorum.needs_another:
        return []
    return list(standing.quorum.counted_keys)


def eligible_keys(hardware: str, avoid: Sequence[str]) -> list[WorkerKey]:
    """Registered, unrevoked keys of the class, whose worker beats now, that may run a rerun which must avoid
    these keys: a key registered for a worker that never starts would hold the request, and the class's place
    in flight, for nothing."""
    since = timezone.now() - timedelta(seconds=settings.RERUN_STALE_AFTER_SECONDS)
    beating = RerunWorker.objects.filter(seen_at__gte=since).exclude(key_id="").values("key_id")
    keys = (
        WorkerKey.objects.registered_here().filter(revoked_at=None, key_id__in=beating).exclude(key_id__in=list(avoid))
    )
    return [key for key in keys.order_by("name") if hardware in key.classes]


def waiting_for_another(request: RerunRequest) -> str:
    """Why a request that must avoid keys cannot be sent yet ('' when another key of its class may take it)."""
    avoid = request.not_by_keys if isinstance(request.not_by_keys, list) else []
    if not avoid or eligible_keys(request.hardware, avoid):
        return ""
    return (
        f"waits for another {request.hardware} worker: every live worker of the class reran this version "
        "already with its key, and a quorum needs a different one"
    )


def top_run_note(run: Run) -> TopRunNote:
    """What a leaderboard says of its #1 (runs/extensions.py): how many workers reproduced it, and its quorum."""
    quorum = run_quorum(run)
    return TopRunNote(run, quorum.sentence(), {"quorum": quorum.as_json()})

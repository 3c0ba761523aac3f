"""The quorum for the top: how many independent workers must agree before a run's "reproduced" stands.

BOINC's model: a result is accepted only when independent hosts agree on it. Here the votes are the
conclusive reruns (reproduced or not reproduced) of one version of a run on its own hardware class, each
signed by a registered worker key. Only distinct keys count: a key's latest vote stands for that key, and its
earlier ones are shown but add nothing. With `distinct_hosts`, two votes also agree only when their attested
environments name different hosts (the harness's `environment.hostId`); votes that name no host all count as
one unknown host, since nothing shows they ran apart.

The decision (`decide`), for a quorum of `size`:

- no vote: nothing decided, the run stays as its source reported it;
- every counted vote one way: that level, and for "reproduced" whether the quorum is complete ("reproduced by
  2 workers") or still short of it ("reproduced by 1 of 2 workers"); one "not reproduced" with no dissent takes
  a run down at once, as it always did: the quorum guards the top, and the policy ranks such a run last;
- votes both ways: a side that reached the quorum and outnumbers the other decides; until then it is a
  disagreement, which needs another rerun by a key that has not voted. Its evidence level until then is
  "reported", what the run was before any rerun decided it. Not "reproduced": a #1 must not keep its crown on
  one vote against one. Not "not reproduced" either: one dissenting worker (a noisy host, a faulty one) would
  then sink an honest run below every other, on a word its peers contradict. "Reported" claims neither; the
  page shows every attestation and says a further rerun decides.

This module imports no Django; verification/quorum.py reads the votes from the database and applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
REPORTED = "reported"

# The states of a quorum, as the run's JSON twin names them (its `quorum.state`).
NONE = "none"  # no conclusive rerun of this version on its class
PENDING = "pending"  # reproduced by fewer agreeing workers than the quorum
MET = "met"  # reproduced by at least the quorum, or not reproduced and not contradicted into a disagreement
DISAGREEMENT = "disagreement"  # votes both ways, neither side decides yet: another rerun does

UNKNOWN_HOST = ""


@dataclass(frozen=True)
class Vote:
    """One conclusive rerun: who signed it (the worker key's id), the host its environment names ('' for none),
    its verdict (REPRODUCED or NOT_REPRODUCED), and its order (later votes of a key replace earlier ones)."""

    key_id: str
    host: str
    level: str
    order: int = 0


@dataclass(frozen=True)
class Quorum:
    """What the votes decide, and how the pages say it."""

    state: str
    level: str  # the evidence level the votes give the run: REPORTED, REPRODUCED or NOT_REPRODUCED
    size: int
    reproduced: int  # agreeing voices for "reproduced" (distinct keys, and hosts where the setting asks)
    not_reproduced: int
    votes: int  # every conclusive rerun, the ones that add nothing included
    counted_keys: tuple[str, ...] = ()  # the keys that voted: a rerun that adds to the quorum runs on another

    @property
    def needs_another(self) -> bool:
        """Whether a rerun by a key that has not voted would add to the quorum: short of it, or disagreeing."""
        return self.state in (PENDING, DISAGREEMENT)

    def sentence(self) -> str:
        """The words the run page and the leaderboard show ('' where no rerun voted)."""
        if self.state == NONE:
            return ""
        if self.state == DISAGREEMENT:
            return (
                f"workers disagree: reproduced by {self.reproduced}, not reproduced by {self.not_reproduced}; "
                "another worker's rerun decides"
            )
        if self.level == REPRODUCED:
            if self.reproduced < self.size:
                return f"reproduced by {self.reproduced} of {self.size} workers"
            return f"reproduced by {self.reproduced} workers"
        if self.level == NOT_REPRODUCED:
            return f"not reproduced by {self.not_reproduced} worker{'s' if self.not_reproduced != 1 else ''}"
        return ""

    def as_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "size": self.size,
            "reproducedBy": self.reproduced,
            "notReproducedBy": self.not_reproduced,
            "conclusiveReruns": self.votes,
            "needsAnotherWorker": self.needs_another,
            "sentence": self.sentence(),
        }


def standing_votes(votes: Iterable[Vote]) -> list[Vote]:
    """Each key's latest vote: a key that reran a version twice speaks once, with its latest word."""
    latest: dict[str, Vote] = {}
    for vote in sorted(votes, key=lambda vote: vote.order):
        latest[vote.key_id] = vote
    return list(latest.values())


def voices(votes: Sequence[Vote], *, distinct_hosts: bool) -> int:
    """How many independent voices agreeing votes are: one per key, or one per host where hosts must differ."""
    if distinct_hosts:
        return len({vote.host for vote in votes})
    return len({vote.key_id for vote in votes})


def decide(votes: Iterable[Vote], size: int, *, distinct_hosts: bool = False) -> Quorum:
    """The quorum's decision on a version's conclusive reruns (see the module's docstring)."""
    every = list(votes)
    size = max(1, size)
    standing = standing_votes(every)
    keys = tuple(sorted(vote.key_id for vote in standing))
    yes = voices([v for v in standing if v.level == REPRODUCED], distinct_hosts=distinct_hosts)
    no = voices([v for v in standing if v.level == NOT_REPRODUCED], distinct_hosts=distinct_hosts)

    def quorum(state: str, level: str) -> Quorum:
        return Quorum(state, level, size, yes, no, len(every), keys)

    if not yes and not no:
        return quorum(NONE, REPORTED)
    if not no:
        return quorum(MET if yes >= size else PENDING, REPRODUCED)
    if not yes:
        return quorum(MET, NOT_REPRODUCED)
    if yes >= size and yes > no:
        return quorum(MET, REPRODUCED)
    if no >= size and no > yes:
        return quorum(MET, NOT_REPRODUCED)
    return quorum(DISAGREEMENT, REPORTED)


def quorum_rule(size: int, *, distinct_hosts: bool) -> str:
    """The quorum as the run page states it beside the evidence rule."""
    apart = " on different hosts" if distinct_hosts else ""
    return (
        f"A run shown as reproduced needs {size} agreeing conclusive reruns of its version by {size} different "
        f"registered workers (different keys{apart}); until then it says how many of {size} reproduced it, and "
        "the verification policy asks another worker for a rerun of its group's #1. A worker's second rerun of a "
        "version is shown but adds nothing. When workers disagree and neither side has the quorum, the run is "
        "back to its reported level and another worker's rerun decides."
    )

"""The verification policy: which runs KernelIndex reruns without being asked, in what order, within what budget.

Every run whose implementation publishes sources and whose definition has a reference (the runs a moderator
could ask a rerun of: verification.reruns.runnable_documents), and every new version of one, is queued for a rerun on
its own hardware class, requested by the system account, when a worker key of that class is registered here
and the class is not paused (VerificationPause), until a conclusive rerun of its current version on that class
has decided it. A class queues within a budget: VERIFICATION_BUDGET_SECONDS_PER_DAY worker-seconds a day (what
today's finished reruns took, and an estimate for those queued or running) and VERIFICATION_MAX_IN_FLIGHT
reruns queued or running at once. The order: a run that would take #1 of its comparison group first, then by
its rank in its group, then the oldest version first.

The periodic sweep (verification.tasks.sweep_reruns) applies it, so a run imported is queued within RERUN_SWEEP_SECONDS.
Nothing else in runs/ imports this module but that task, the URLs (verification.views) and the run page
(runs.pages): it is a domain of its own, meant to become an app of its own.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Avg, Case, Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from records.hardware import hardware_class, hardware_class_of
from runs.models import BELOW_FLOOR, RANKABLE, RANKED, Run, RunVersion
from runs.selectors import document_value, run_hardware_class
from verification import quorum_policy
from verification.harness_versions import current_harness
from verification.models import RerunRequest, VerificationPause, WorkerKey
from verification.reruns import RerunRefusedError, request_rerun, runnable_documents, system_user
from web.scopes import VERIFICATION_PLACES_MOVED, VERIFICATION_QUEUE

REASON_PREFIX = "verification policy"
# A rerun of a version that did not decide (inconclusive after its attempts, failed, cancelled) is not queued
# again for this long: the budget is not spent on the same run every sweep.
RETRY_AFTER = timedelta(days=1)
# What a rerun of a class is taken to cost before any has finished there.
DEFAULT_ESTIMATE_SECONDS = 60.0
# How many of a class's latest finished reruns its estimate averages.
ESTIMATE_OVER = 20
# The queue as the last sweep saw it, to retire pages that show it only when it changed.
FINGERPRINT_KEY = "verification:fingerprint"
PLACES_FINGERPRINT_KEY = "verification:places-fingerprint"


def policy_on() -> bool:
    return bool(settings.VERIFICATION_POLICY)


def day_start(now: datetime) -> datetime:
    """Where today began, in the site's time zone: budgets are per day."""
    local = timezone.localtime(now)
    return timezone.make_aware(datetime.combine(local.date(), time.min), local.tzinfo)


def registered_classes() -> set[str]:
    """The classes a worker key registered here (and not revoked) may serve: the only ones the policy queues."""
    keys = WorkerKey.objects.registered_here().filter(revoked_at=None).values_list("hardware", flat=True)
    return {name for hardware in keys for name in hardware.split(",") if name}


# -- a class's budget -----------------------------------------------------------------


@dataclass
class ClassState:
    """One hardware class as the policy sees it today."""

    name: str
    registered: bool
    pause: VerificationPause | None
    budget_seconds: float
    spent_seconds: float
    in_flight: int
    estimate_seconds: float
    max_in_flight: int

    @property
    def committed_seconds(self) -> float:
        return self.spent_seconds + self.in_flight * self.estimate_seconds

    @property
    def left_seconds(self) -> float:
        return max(0.0, self.budget_seconds - self.committed_seconds)

    @property
    def budget_spent(self) -> bool:
        return self.committed_seconds >= self.budget_seconds

    @property
    def may_queue(self) -> bool:
        return self.registered and self.pause is None and self.in_flight < self.max_in_flight and not self.budget_spent

    def holdup(self) -> str:
        """Why nothing more is queued on this class now ('' while it queues)."""
        if not self.registered:
            return f"no worker of {self.name} is registered here"
        if self.pause is not None:
            return f"a moderator paused the policy on {self.name}"
        if self.budget_spent:
            return f"today's budget on {self.name} is spent; it resumes tomorrow"
        if self.in_flight >= self.max_in_flight:
            return f"{self.in_flight} rerun(s) of {self.name} already queued or running"
        return ""

    def as_json(self) -> dict[str, Any]:
        return {
            "hardwareClass": self.name,
            "registeredWorker": self.registered,
            "paused": self.pause is not None,
            "pausedAt": self.pause.paused_at.isoformat() if self.pause else None,
            "budgetSeconds": self.budget_seconds,
            "spentSeconds": round(self.spent_seconds, 3),
            "inFlight": self.in_flight,
            "estimateSecondsPerRerun": round(self.estimate_seconds, 3),
            "leftSeconds": round(self.left_seconds, 3),
            "maxInFlight": self.max_in_flight,
            "queuesNow": self.may_queue,
            "holdup": self.holdup(),
        }


def class_state(name: str, now: datetime, registered: set[str], pauses: dict[str, VerificationPause]) -> ClassState:
    on_class = RerunRequest.objects.filter(hardware=name)
    spent = on_class.filter(finished_at__gte=day_start(now)).aggregate(s=Sum("harness_seconds"))["s"] or 0.0
    latest = on_class.filter(harness_seconds__isnull=False, finished_at__isnull=False).order_by("-finished_at")
    estimate = latest.values("pk")[:ESTIMATE_OVER]
    average = RerunRequest.objects.filter(pk__in=Subquery(estimate)).aggregate(a=Avg("harness_seconds"))["a"]
    return ClassState(
        name=name,
        registered=name in registered,
        pause=pauses.get(name),
        budget_seconds=float(settings.VERIFICATION_BUDGET_SECONDS_PER_DAY),
        spent_seconds=float(spent),
        in_flight=on_class.active().count(),
        estimate_seconds=float(average) if average else DEFAULT_ESTIMATE_SECONDS,
        max_in_flight=int(settings.VERIFICATION_MAX_IN_FLIGHT),
    )


# -- the queue --------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    """A run the policy would queue, and its place in its class's queue."""

    run: Run
    hardware_class: str
    position: int
    would_take_first: bool
    rank: int | None
    imported_at: datetime
    # Verified before, by a harness other than the one this site holds now: a top rank is verified again.
    again_for_new_harness: bool = False

    def group_label(self) -> str:
        definition = self.run.definition.name if self.run.definition else self.run.title
        return f"{definition} on {self.run.group.hardware}"

    def because(self, now: datetime | None = None) -> str:
        """Why it stands where it does: a time faster than physically possible, '#1 candidate', its rank, its age;
        and why it waits at all when a rerun decided it before."""
        said = self._place(now)
        return f"{said}; its verdict came from an earlier harness" if self.again_for_new_harness else said

    def _place(self, now: datetime | None) -> str:
        if self.run.faster_than_floor:
            return f"faster than physically possible on {self.group_label()}"
        if self.would_take_first:
            holds = self.run.group.best_run_id == self.run.pk
            return f"{'holds' if holds else 'would take'} #1 of {self.group_label()}"
        if self.rank is not None:
            return f"rank {self.rank} of {self.group_label()}"
        return f"imported {age((now or timezone.now()) - self.imported_at)} ago"

    def as_json(self) -> dict[str, Any]:
        return {
            "runId": self.run.run_id,
            "url": self.run.get_absolute_url(),
            "digest": self.run.digest,
            "hardwareClass": self.hardware_class,
            "position": self.position,
            "wouldTakeFirst": self.would_take_first,
            "rank": self.rank,
            "group": self.run.group.key,
            "importedAt": self.imported_at.isoformat(),
            "reason": self.because(),
        }


@dataclass
class Queue:
    """Every run the policy would queue, by class, in order; the classes' states; classes with no worker."""

    classes: dict[str, ClassState]
    waiting: list[Waiting] = field(default_factory=list)  # in order, every class together
    # Runs that would be verified if a worker of their class were registered here, by class.
    unserved: Counter[str] = field(default_factory=Counter)
    # Groups' #1s whose quorum needs another worker's rerun (verification.quorum_policy), asked for before the rest.
    quorum: list[quorum_policy.QuorumWanted] = field(default_factory=list)

    def of_class(self, name: str) -> list[Waiting]:
        return [entry for entry in self.waiting if entry.hardware_class == name]

    def find(self, run: Run) -> Waiting | None:
        return next((entry for entry in self.waiting if entry.run.pk == run.pk), None)


def candidates() -> Any:
    """Runs the policy may queue, in its order, before the checks that read documents: listed, no rerun's
    result, with an implementation and a workload, no rerun queued or running."""
    active = RerunRequest.objects.active().filter(run=OuterRef("pk"))
    faster = (
        Run.objects.filter(RANKED, group=OuterRef("group"), latency_ns__lt=OuterRef("latency_ns"))
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    imported = RunVersion.objects.filter(run=OuterRef("pk"), digest=OuterRef("digest")).values("imported_at")[:1]
    first = Q(RANKABLE) & (Q(group__best_latency_ns=None) | Q(latency_ns__lte=F("group__best_latency_ns")))
    return (
        Run.objects.filter(withdrawn_at=None, rerun_result_of__isnull=True)
        .exclude(implementation_digest="")
        .exclude(workload_digest="")
        .exclude(Exists(active))
        .annotate(
            # A time below the physics floor (records.floor) is a wrong number: verified before anything else.
            policy_floor=Case(When(BELOW_FLOOR, then=Value(0)), default=Value(1), output_field=IntegerField()),
            policy_first=Case(When(first, then=Value(0)), default=Value(1), output_field=IntegerField()),
            policy_rank=Case(
                When(RANKED, then=Coalesce(Subquery(faster), 0) + 1), default=None, output_field=IntegerField()
            ),
            policy_imported_at=Coalesce(Subquery(imported), F("published_at")),
        )
        .select_related("group", "definition")
        .order_by("policy_floor", "policy_first", F("policy_rank").asc(nulls_last=True), "policy_imported_at", "run_id")
    )


class _Memo:
    """What one pass reads once per document: a class per environment, runnability per workload and solution."""

    def __init__(self) -> None:
        self.classes: dict[tuple[str, str], str] = {}
        self.refusals: dict[tuple[str, str], str] = {}

    def class_of(self, run: Run) -> str:
        key = (run.environment_digest, run.hardware)
        if key not in self.classes:
            environment = document_value(run.environment_digest)
            self.classes[key] = (
                hardware_class(environment["spec"]["hardware"]) if environment else hardware_class_of(run.hardware)
            )
        return self.classes[key]

    def refusal(self, run: Run) -> str:
        """Why the run cannot be rerun ('' when it can)."""
        key = (run.workload_digest, run.implementation_digest)
        if key not in self.refusals:
            try:
                runnable_documents(run)
                self.refusals[key] = ""
            except RerunRefusedError as refused:
                self.refusals[key] = str(refused)
        return self.refusals[key]


@dataclass(frozen=True)
class Settled:
    """(run, version, class) tried lately, and those decided, with the harnesses (digests) whose verdicts did."""

    lately: set[tuple[int, str, str]]
    decided_by: dict[tuple[int, str, str], set[str]]

    def holds(self, key: tuple[int, str, str], rank: int | None) -> bool:
        """Not queued again: tried lately, or decided, unless the run is among its group's first
        VERIFICATION_RECHECK_RANKS and judged only by other harnesses than this site's."""
        if key in self.lately:
            return True
        if key not in self.decided_by:
            return False
        top = rank is not None and rank <= settings.VERIFICATION_RECHECK_RANKS
        return not (top and self.judged_by_another_harness(key))

    def judged_by_another_harness(self, key: tuple[int, str, str]) -> bool:
        """Decided, and every verdict came from a harness other than this site's (one that names none is taken as
        this one's: nothing says otherwise)."""
        harnesses = self.decided_by.get(key)
        return harnesses is not None and not harnesses & {current_harness(), ""}


def settled(now: datetime) -> Settled:
    """What not to queue again (Settled.holds)."""
    rows = RerunRequest.objects.filter(Q(verdict__gt="") | Q(finished_at__gte=now - RETRY_AFTER))
    lately: set[tuple[int, str, str]] = set()
    decided_by: dict[tuple[int, str, str], set[str]] = {}
    for run, version, name, verdict, harness, finished in rows.values_list(
        "run_id", "run_digest", "hardware", "verdict", "harness_digest", "finished_at"
    ):
        if finished is not None and finished >= now - RETRY_AFTER:
            lately.add((run, version, name))
        if verdict:
            decided_by.setdefault((run, version, name), set()).add(harness)
    return Settled(lately, decided_by)


def build_queue(now: datetime | None = None, *, until: Run | None = None) -> Queue:
    """The queue, every class's; with `until`, only as far as that run (a run page's place in it reads no
    further than the runs before it, not the whole index)."""
    now = now or timezone.now()
    registered = registered_classes()
    pauses = {pause.hardware_class: pause for pause in VerificationPause.objects.all()}
    names = registered | set(pauses)
    queue = Queue({name: class_state(name, now, registered, pauses) for name in sorted(names)})
    if not policy_on():
        return queue
    queue.quorum = quorum_policy.quorum_wanted(registered, now - RETRY_AFTER)
    done = settled(now)
    memo = _Memo()
    positions: Counter[str] = Counter()
    for run in candidates().iterator(chunk_size=500):
        name = memo.class_of(run)
        key = (run.pk, run.digest, name)
        if done.holds(key, run.policy_rank) or memo.refusal(run):
            continue
        if name not in registered:
            queue.unserved[name] += 1
            continue
        positions[name] += 1
        first, rank, imported = (getattr(run, f"policy_{key}") for key in ("first", "rank", "imported_at"))
        again = done.judged_by_another_harness(key)
        queue.waiting.append(Waiting(run, name, positions[name], first == 0, rank, imported, again))
        if until is not None and run.pk == until.pk:
            break
    return queue


# -- applying it ------------------------------------------------------------------------


def apply_policy(now: datetime | None = None) -> list[RerunRequest]:
    """Queue what the policy says, within each class's budget; idempotent (a run queued is no longer waiting).

    The requests are sent as a moderator's are, once each commits (verification.reruns.request_rerun)."""
    now = now or timezone.now()
    queue = build_queue(now)
    queued: list[RerunRequest] = []
    if policy_on():
        user = system_user()
        for wanted in queue.quorum:
            wanted_state = queue.classes.get(wanted.hardware_class)
            if wanted_state is None or not wanted_state.may_queue:
                continue
            asked = quorum_policy.ask_for_quorum(wanted, user, REASON_PREFIX)
            if asked is not None:
                queued.append(asked)
                wanted_state.in_flight += 1
        for state in queue.classes.values():
            for entry in queue.of_class(state.name):
                if not state.may_queue:
                    break
                reason = f"{REASON_PREFIX}: {entry.because(now)}"
                try:
                    queued.append(request_rerun(entry.run, user=user, hardware=state.name, reason=reason))
                except RerunRefusedError:
                    continue  # queued or withdrawn since the queue was read: the next sweep sees it
                state.in_flight += 1
    _retire_if_changed(queue, queued, now)
    return queued


def _retire_if_changed(queue: Queue, queued: list[RerunRequest], now: datetime) -> None:
    """Pages that show the queue are retired when what they show of it changed: /verification at any change, run
    pages (each run's place) only when the places, a class's pause or worker, or a spent budget did. With the
    policy off a run page shows no place, and nothing the sweep sees retires it."""
    classes = queue.classes.values()
    places = [
        [(entry.run.pk, entry.run.digest, entry.hardware_class, entry.position) for entry in queue.waiting],
        [(state.name, state.registered, state.pause is not None, state.budget_spent) for state in classes],
        # A #1's page says whether its quorum's rerun waits, and why.
        [(wanted.run.pk, wanted.holdup) for wanted in queue.quorum],
    ]
    seen = [
        policy_on(),
        places,
        [sorted(state.as_json().items()) for state in classes],
        sorted(queue.unserved.items()),
        [(wanted.run.pk, wanted.quorum.as_json(), wanted.holdup) for wanted in queue.quorum],
        [request.pk for request in queued],
        list(ran_today(now).values_list("pk", "state", "verdict")),
    ]
    if _changed(FINGERPRINT_KEY, seen):
        VERIFICATION_QUEUE.retire_now()
    if policy_on() and _changed(PLACES_FINGERPRINT_KEY, places):
        VERIFICATION_PLACES_MOVED.retire_now()


def _changed(key: str, figures: list[Any]) -> bool:
    """Whether these figures differ from the ones the last sweep stored under `key` (and store them)."""
    fingerprint = hashlib.sha256(repr(figures).encode()).hexdigest()
    if cache.get(key) == fingerprint:
        return False
    cache.set(key, fingerprint, timeout=None)
    return True


def ran_today(now: datetime) -> Any:
    return (
        RerunRequest.objects.filter(finished_at__gte=day_start(now))
        .select_related("run", "requested_by")
        .order_by("-finished_at", "-id")
    )


# -- one run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunVerification:
    """Where one run stands with the policy, as its page and JSON twin say it."""

    state: str
    hardware_class: str
    sentence: str
    position: int | None = None
    paused: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "hardwareClass": self.hardware_class,
            "position": self.position,
            "paused": self.paused,
            "reason": self.sentence,
        }


def run_verification(run: Run, now: datetime | None = None) -> RunVerification:
    now = now or timezone.now()
    name = run_hardware_class(run)

    def said(state: str, sentence: str, **more: Any) -> RunVerification:
        return RunVerification(state, name, sentence, **more)

    if not policy_on():
        return said("off", "The verification policy is off on this site; a moderator can still ask for a rerun.")
    if run.withdrawn_at is not None:
        return said("withdrawn", "A withdrawn run is not verified.")
    if RerunRequest.objects.filter(result_run=run).exists():
        return said("rerun-result", "This run is a rerun's result: it is what verifies another run.")
    try:
        runnable_documents(run)
    except RerunRefusedError as refused:
        return said("not-runnable", f"It won't be verified: {refused}.")
    if RerunRequest.objects.active().filter(run=run).exists():
        return said("in-flight", "A rerun of this run is queued or running: see Reruns below.")
    done, key = settled(now), (run.pk, run.digest, name)
    # Decided by an earlier harness only: waiting again where its rank is among the top (the queue says).
    may_recheck = key not in done.lately and done.judged_by_another_harness(key)
    if done.holds(key, None) and not may_recheck:
        if key in done.decided_by:
            if wait := quorum_policy.run_quorum_wait(run, now - RETRY_AFTER):
                return said("quorum", wait)
            return said("verified", f"A rerun on {name} has decided this version of the run.")
        return said(
            "tried", f"A rerun of this version on {name} ran in the last day without deciding; it is tried again later."
        )
    queue = build_queue(now, until=run)
    if may_recheck and queue.find(run) is None:
        return said("verified", f"A rerun on {name} has decided this version of the run.")
    return _waiting(run, name, queue, said)


def _waiting(run: Run, name: str, queue: Queue, said: Callable[..., RunVerification]) -> RunVerification:
    state = queue.classes.get(name)
    if state is None or not state.registered:
        return said("no-worker", f"It won't be verified yet: no worker of {name} is registered here.")
    entry = queue.find(run)
    if entry is None:  # queued between the checks above and the queue's reading
        return said("in-flight", "A rerun of this run is queued or running: see Reruns below.")
    place = f"{ordinal(entry.position)} in the queue of {name}"
    if state.pause is not None:
        return said(
            "paused",
            f"Waiting for verification ({place}), but a moderator paused the policy on {name}.",
            position=entry.position,
            paused=True,
        )
    later = f"; {state.holdup()}" if state.budget_spent else ""
    return said("waiting", f"Waiting for verification: {place}{later}.", position=entry.position)


# -- words ------------------------------------------------------------------------------


def ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def age(elapsed: timedelta) -> str:
    """'2 days', '3 hours', '5 minutes', 'less than a minute'."""
    seconds = max(0, int(elapsed.total_seconds()))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return "less than a minute"

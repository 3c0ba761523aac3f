"""The run index: immutable documents by digest, and the rows the pages query.

`Document` rows are the record of truth and are never edited. `Run` and the
tables around it are an index over them, rebuilt the same way from the same
manifests; a changed source record adds a `RunVersion`, never an edit of a
stored document.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.postgres.indexes import GistIndex, OpClass
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Upper
from django.urls import reverse

from records import schema
from records.canonical import DIGEST_LENGTH, parse_json
from records.schema import RANKABLE_STATUSES
from records.sources import display_external_id, source_title


class Document(models.Model):
    digest = models.CharField(primary_key=True, max_length=DIGEST_LENGTH)
    kind = models.CharField(max_length=32)
    name = models.CharField(max_length=253)
    canonical = models.TextField(help_text="RFC 8785 form; the digest is the sha256 of exactly this text.")
    stored_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.name} ({self.digest[:19]})"

    @property
    def value(self) -> Any:
        return parse_json(self.canonical)


class Definition(models.Model):
    """A benchmark definition (an operator and its cases) as one source names it."""

    source = models.CharField(max_length=schema.SOURCE_MAX_LENGTH)
    name = models.CharField(max_length=schema.DEFINITION_NAME_MAX_LENGTH)
    external_id = models.CharField(max_length=schema.DEFINITION_ID_MAX_LENGTH, blank=True)
    title = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    subset = models.CharField(max_length=64, blank=True)
    hf_id = models.CharField(max_length=255, blank=True)
    axes = models.JSONField(default=dict, blank=True)
    inputs = models.JSONField(default=dict, blank=True)
    outputs = models.JSONField(default=dict, blank=True)
    case_count = models.PositiveIntegerField(default=0)
    content_digest = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    workload_digest = models.CharField(
        max_length=DIGEST_LENGTH,
        blank=True,
        help_text="The runnable Workload document (definition with its reference, and cases), where one is known.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "name"], name="definition_source_name")]
        indexes = [models.Index(fields=["source", "external_id"])]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("runs:definition", args=[self.source, self.name])

    @property
    def source_title(self) -> str:
        return source_title(self.source)


class WorkloadCase(models.Model):
    definition = models.ForeignKey(Definition, on_delete=models.CASCADE, related_name="cases")
    index = models.PositiveIntegerField()
    uuid = models.CharField(max_length=64)
    axes = models.JSONField(default=dict)
    inputs = models.JSONField(default=dict)
    tolerance = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["definition", "index"]
        constraints = [models.UniqueConstraint(fields=["definition", "index"], name="case_definition_index")]

    def __str__(self) -> str:
        return f"{self.definition.name} case {self.index}"


class ReferenceRow(models.Model):
    """A reference latency for a definition on one GPU: shown in its groups, never ranked."""

    class Kind(models.TextChoices):
        SOL_BOUND = "sol_bound", "SOL bound"
        SCORING_BASELINE = "scoring_baseline", "scoring baseline"
        REFERENCE = "reference", "reference implementation"

    definition = models.ForeignKey(Definition, on_delete=models.CASCADE, related_name="references")
    hardware = models.CharField(max_length=200)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    latency_ns = models.FloatField()
    per_case_ns = models.JSONField(default=list)

    class Meta:
        ordering = ["latency_ns"]
        constraints = [
            models.UniqueConstraint(fields=["definition", "hardware", "kind"], name="reference_definition_kind")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for {self.definition.name} on {self.hardware}"


class ComparisonGroup(models.Model):
    """Runs that are truly comparable: same workload, protocol family and version, hardware."""

    key = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    definition = models.ForeignKey(Definition, null=True, blank=True, on_delete=models.SET_NULL, related_name="groups")
    family = models.CharField(max_length=schema.FAMILY_MAX_LENGTH)
    harness = models.CharField(max_length=schema.HARNESS_MAX_LENGTH)
    harness_version = models.CharField(max_length=schema.HARNESS_VERSION_MAX_LENGTH)
    hardware = models.CharField(max_length=schema.PRODUCT_MAX_LENGTH)
    architecture = models.CharField(max_length=schema.ARCHITECTURE_MAX_LENGTH, blank=True)
    native_order = models.CharField(
        max_length=32, blank=True, help_text="The source's own ranking metric (higher first), if it publishes one."
    )
    # Figures kept by every writer that changes the group's runs (runs.figures.refresh_group_figures), so that
    # pages read them here instead of counting a group's runs: its listed runs, the ranked ones (RANKED), and
    # the fastest of those.
    run_count = models.PositiveIntegerField(default=0)
    ranked_count = models.PositiveIntegerField(default=0)
    best_latency_ns = models.FloatField(null=True, blank=True)
    best_run = models.ForeignKey(
        "Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # The best run's run id, for a run page's "Compare with #1", which would otherwise join the whole run.
    best_run_run_id = models.CharField(max_length=16, blank=True)
    # In a large group, [latency, ranked runs faster] every runs.figures.RANK_MARK_EVERY ranked runs, from which
    # a run's rank is counted (runs.selectors.faster_in); empty in a small one.
    rank_marks = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"{self.definition or 'unknown definition'} · {self.hardware} · {self.harness} {self.harness_version}"

    def get_absolute_url(self) -> str:
        return reverse("runs:group", args=[self.key])


class SourceBoard(models.Model):
    """A source's public board for one definition: its score distribution, not runs."""

    source = models.CharField(max_length=32)
    definition_external_id = models.CharField(max_length=64)
    hardware = models.CharField(max_length=200)
    stack_version = models.CharField(max_length=100)
    scores = models.JSONField(default=list)
    top_score = models.FloatField(null=True, blank=True)
    top_user = models.CharField(max_length=255, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "definition_external_id", "hardware", "stack_version"], name="board_identity"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} board for {self.definition_external_id} on {self.hardware}"

    def rank_of(self, score: float) -> int | None:
        """1 + the entries scoring higher; None when the score is not on this board."""
        if not any(abs(entry - score) < 1e-9 for entry in self.scores):
            return None
        return 1 + sum(1 for entry in self.scores if entry > score + 1e-9)


class ImportLog(models.Model):
    """One import unit (a file or a problem folder) as it was read."""

    path = models.CharField(max_length=1000)
    source = models.CharField(max_length=32)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.path} ({self.started_at:%Y-%m-%d %H:%M})"


# A group's listed runs fall in two parts, each with an index of its own (Run.Meta) whose
# condition is this very Q, so that PostgreSQL sees the queries match the index.
LISTED = Q(withdrawn_at=None)
RANKABLE = LISTED & Q(status__in=RANKABLE_STATUSES, latency_ns__isnull=False)
UNRANKED = LISTED & ~Q(status__in=RANKABLE_STATUSES, latency_ns__isnull=False)
# A KernelIndex leaderboard lists a group's runs in four parts, in this order (runs.selectors.latency_order):
# the ranked runs, then the rankable runs a rerun did not reproduce (ranked after all the others), then the
# unranked runs that have a latency, then those without one. Each part has an index of its own on
# (group, latency, run id), whose condition is the part's Q, so a page is read from an index in order.
# A run is ranked after all the others for either of two reasons: a rerun did not reproduce it, or it reported a
# time below the physics floor (records.floor). RANKED_LAST is the one condition every order reads.
NOT_REPRODUCED = Q(evidence="not_reproduced")
BELOW_FLOOR = Q(faster_than_floor=True)
RANKED_LAST = NOT_REPRODUCED | BELOW_FLOOR
RANKED = RANKABLE & ~RANKED_LAST
DEMOTED = RANKABLE & RANKED_LAST
UNRANKED_MEASURED = LISTED & Q(latency_ns__isnull=False) & ~Q(status__in=RANKABLE_STATUSES)
UNMEASURED = LISTED & Q(latency_ns=None)
# A source-ordered leaderboard (runs.selectors.source_order): the runs on the source's board by its rank, those a
# rerun did not reproduce after all the others.
ON_BOARD = LISTED & Q(source_rank__isnull=False) & ~RANKED_LAST
BOARD_DEMOTED = LISTED & Q(source_rank__isnull=False) & RANKED_LAST
# Runs whose implementation names an author (runs.search reads them through indexes on this condition).
AUTHORED = ~Q(author="")
# Runs whose project says more than their implementation's name: most name none, or one the same as the
# implementation (a SOL-ExecBench submission without an Implementation document), which the implementation's
# own trigram index finds already. Only these are in the project's trigram index (runs.search).
DISTINCT_PROJECT = ~Q(project="") & ~Q(project=F("implementation_name"))


# The date lists sort by, and the order itself; the run_newest index is on exactly these expressions.
DATED = Coalesce("observed_at", "published_at")
NEWEST_KEYS = (DATED, F("run_id"))
NEWEST_FIRST = tuple(key.desc() for key in NEWEST_KEYS)


# What a list shows of each run (RunQuerySet.for_lists).
LISTED_FIELDS = (
    *("run_id", "source", "external_id", "digest", "group", "implementation_name", "hardware", "status"),
    *("evidence", "withdrawn_at", "primary_statistic", "latency_ns", "source_score", "source_rank"),
    *("reported_latency_ns", "on_public_board", "observed_at", "published_at", "faster_than_floor"),
    *("definition__source", "definition__name", "definition__title"),
)


class RunQuerySet(models.QuerySet["Run"]):
    def listed(self) -> RunQuerySet:
        return self.filter(LISTED)

    def rankable(self) -> RunQuerySet:
        """Listed runs with a measured latency of a correct kernel: the runs KernelIndex ranks."""
        return self.filter(RANKABLE)

    def unranked(self) -> RunQuerySet:
        """Listed runs that cannot be ranked: failed, incorrect, or without a latency."""
        return self.filter(UNRANKED)

    def ranked(self) -> RunQuerySet:
        """Rankable runs that no rerun has failed to reproduce: the runs a group's figures and #1 count."""
        return self.filter(RANKED)

    def for_lists(self) -> RunQuerySet:
        """The fields a list's rows show (runs.tables, runs.serializers.run_summary), with the definition's
        name: a list page loads 50 runs, and loading their other columns took a millisecond of it. A row that
        read another field would cost a query of its own: tests count a list's queries as it grows."""
        return self.select_related("definition").only(*LISTED_FIELDS)

    def newest_first(self) -> RunQuerySet:
        """Lists' order: by the date a run was observed at its source (else published here), newest first."""
        return self.order_by(*NEWEST_FIRST)


class Run(models.Model):
    """A run's permalink and the index fields of its current version."""

    class Status(models.TextChoices):
        # The one spelling of each status; tables, legends and sentences read it here (STATUS_LABELS).
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        ERROR = "error", "Error"
        TIMEOUT = "timeout", "Timeout"
        MEASURED = "measured", "Measured"

    class Evidence(models.TextChoices):
        # The one spelling of each level; every page, twin and legend reads it here (EVIDENCE_LABELS).
        REPORTED = "reported", "Reported"
        REPRODUCED = "reproduced", "Reproduced"
        NOT_REPRODUCED = "not_reproduced", "Not reproduced"

    # Unique through a constraint, not unique=True, which on PostgreSQL also builds a
    # varchar_pattern_ops index for LIKE: every run lookup is by equality.
    run_id = models.CharField(max_length=16)
    source = models.CharField(max_length=schema.SOURCE_MAX_LENGTH)
    external_id = models.CharField(max_length=schema.EXTERNAL_ID_MAX_LENGTH)
    digest = models.CharField(max_length=DIGEST_LENGTH, help_text="The current version's run document.")
    protocol_digest = models.CharField(max_length=DIGEST_LENGTH)
    environment_digest = models.CharField(max_length=DIGEST_LENGTH)
    workload_digest = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    implementation_digest = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    declared_digests = models.JSONField(default=dict, blank=True)

    # No index of their own: `run_definition` serves the definition, and the group indexes below
    # lead with group_id. Each index is written for every run an import adds.
    definition = models.ForeignKey(
        Definition, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs", db_index=False
    )
    group = models.ForeignKey(ComparisonGroup, on_delete=models.PROTECT, related_name="runs", db_index=False)
    title = models.CharField(max_length=500)
    implementation_name = models.CharField(max_length=255)
    project = models.CharField(max_length=255, blank=True)
    # The implementation's author, where its Implementation document names one (spec.author).
    author = models.CharField(max_length=255, blank=True)
    hardware = models.CharField(max_length=schema.PRODUCT_MAX_LENGTH)

    status = models.CharField(max_length=16, choices=Status.choices)
    evidence = models.CharField(max_length=16, choices=Evidence.choices, default=Evidence.REPORTED)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_reason = models.TextField(blank=True)

    primary_statistic = models.CharField(max_length=schema.STATISTIC_MAX_LENGTH)
    # The latency the run is ranked by and shown at: the one it reported, or where the rerun that reproduced it
    # measured it slower beyond the tolerance, the rerun's (records.rerun.ranked_latency); the reported one is
    # then kept in reported_latency_ns, None otherwise.
    latency_ns = models.FloatField(null=True, blank=True)
    reported_latency_ns = models.FloatField(null=True, blank=True)
    source_score = models.FloatField(null=True, blank=True)
    source_rank = models.PositiveIntegerField(null=True, blank=True)
    on_public_board = models.BooleanField(default=True)
    # Whether a reported time of the run is below its physics floor on its hardware class (records.floor), and
    # the worst such claim (records.floor.Breach.as_json, with the rule's version); decided by runs.floors.
    faster_than_floor = models.BooleanField(default=False)
    floor_breach = models.JSONField(null=True, blank=True)
    # How many of each the run has, kept by their writers (runs.figures), so that its page asks only for what
    # it has: versions of its record (the page lists them where there are two or more), reruns requested,
    # evidence changes, approved notes and reproductions, and issue reports (counted by attestations, which owns
    # those rows).
    version_count = models.PositiveIntegerField(default=1)
    rerun_count = models.PositiveIntegerField(default=0)
    evidence_change_count = models.PositiveIntegerField(default=0)
    note_count = models.PositiveIntegerField(default=0)
    issue_report_count = models.PositiveIntegerField(default=0)

    observed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunQuerySet.as_manager()
    # Its place on the leaderboard page it is shown on (None: not ranked); set by runs.selectors.leaderboard.
    position: int | None

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run_id"], name="run_run_id"),
            models.UniqueConstraint(fields=["source", "external_id"], name="run_source_external_id"),
        ]
        indexes = [
            # A group's runs as leaderboards read them: a page, a run's rank (a count of the runs
            # ahead) and a group's #1 read one of these two indexes alone.
            models.Index(fields=["group", "latency_ns", "run_id"], name="run_group_ranked", condition=RANKED),
            models.Index(fields=["group", "latency_ns", "run_id"], name="run_group_demoted", condition=DEMOTED),
            models.Index(
                fields=["group", "latency_ns", "run_id"], name="run_group_unranked", condition=UNRANKED_MEASURED
            ),
            models.Index(fields=["group", "run_id"], name="run_group_unmeasured", condition=UNMEASURED),
            # A source-ordered group's board runs, in the source's order, then those a rerun did not reproduce.
            models.Index("group", "source_rank", "run_id", name="run_group_source_rank", condition=ON_BOARD),
            models.Index("group", "source_rank", "run_id", name="run_group_source_demoted", condition=BOARD_DEMOTED),
            # Lists page newest first by keyset (runs/keyset.py): each reads its page from one of these.
            # (Ascending: PostgreSQL reads them backwards, and a row comparison bounds the scan.)
            models.Index(DATED, "run_id", name="run_newest"),
            models.Index("definition", DATED, "run_id", name="run_definition"),
            models.Index("source", DATED, "run_id", name="run_source_newest"),
            models.Index("hardware", DATED, "run_id", name="run_hardware"),
            # Evidence other than "reported" is rare: the filter reads these runs alone.
            models.Index("evidence", DATED, "run_id", name="run_evidence", condition=~Q(evidence="reported")),
            # Search by name (runs.search), on Django's case-insensitive lookups, which PostgreSQL writes on
            # UPPER(column): an implementation's exact name through a btree; a fragment of a name (and a
            # project's name) through trigram indexes, PostgreSQL only (migration 0007). GiST, not GIN: where
            # every name shares most of its trigrams ("submission 18332"), a GIN index reads each one's list
            # of a million runs (90 ms a query at 10^6 runs, against 20 ms).
            models.Index(Upper("implementation_name"), name="run_implementation_upper"),
            GistIndex(OpClass(Upper("implementation_name"), name="gist_trgm_ops"), name="run_implementation_trgm"),
            GistIndex(
                OpClass(Upper("project"), name="gist_trgm_ops"), name="run_project_trgm", condition=DISTINCT_PROJECT
            ),
            # Most runs name no author: both author indexes hold only those that do (AUTHORED).
            models.Index(Upper("author"), name="run_author_upper", condition=AUTHORED),
            GistIndex(OpClass(Upper("author"), name="gist_trgm_ops"), name="run_author_trgm", condition=AUTHORED),
        ]

    def __str__(self) -> str:
        return f"Run {self.run_id}"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.run_id])

    @property
    def source_title(self) -> str:
        return source_title(self.source)

    @property
    def display_external_id(self) -> str:
        return display_external_id(self.source, self.external_id)

    @property
    def reported_latency(self) -> float | None:
        """The latency the run reported: latency_ns, unless a rerun's is ranked in its place."""
        return self.latency_ns if self.reported_latency_ns is None else self.reported_latency_ns

    @property
    def is_rankable(self) -> bool:
        return self.withdrawn_at is None and self.status in RANKABLE_STATUSES and self.latency_ns is not None


# A rerun that could not decide moves no run's level, so no run holds it; pages still name it beside the
# three levels a run can hold, in the same spelling.
INCONCLUSIVE = "inconclusive"
EVIDENCE_LABELS: dict[str, str] = {**dict(Run.Evidence.choices), INCONCLUSIVE: "Inconclusive"}
# What each level means, for badges' titles and the legend on list pages (DESIGN.md, "Evidence levels").
EVIDENCE_MEANINGS: dict[str, str] = {
    Run.Evidence.REPORTED: "As the source published it; no KernelIndex rerun has decided it.",
    Run.Evidence.REPRODUCED: "A KernelIndex rerun on the run's own hardware class confirmed the claim "
    "within the stated tolerance.",
    Run.Evidence.NOT_REPRODUCED: "A KernelIndex rerun confirmed a correctness failure, measured the kernel "
    "slower than claimed beyond the tolerance, or caught it tampering with its evaluation. "
    "KernelIndex's own ranking puts it after every other run.",
    INCONCLUSIVE: "A rerun could not decide (too noisy, or the evaluation itself failed); it changes "
    "nothing and is retried.",
}
# A status as pages name it, for values read from documents (a case's status) as well as from rows.
STATUS_LABELS: dict[str, str] = dict(Run.Status.choices)
# Two statuses readers confuse: a passed run was checked for correctness, a measured one was only timed.
STATUS_MEANINGS: dict[str, str] = {
    Run.Status.PASSED: "Its outputs were checked against the definition's reference and were correct.",
    Run.Status.MEASURED: "Only timed, not checked: a timing of the reference implementation itself.",
}


class RunVersion(models.Model):
    """Every run document a run has had; the newest one is the run's current digest."""

    # Looked up by run through the unique (run, digest) index; one of its own would only cost writes.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="versions", db_index=False)
    digest = models.CharField(max_length=DIGEST_LENGTH)
    declared_digests = models.JSONField(default=dict, blank=True)
    import_log = models.ForeignKey(ImportLog, null=True, blank=True, on_delete=models.SET_NULL)
    source_line = models.PositiveIntegerField(null=True, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-imported_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["run", "digest"], name="run_version_digest")]

    def __str__(self) -> str:
        return f"{self.run} {self.digest[:19]}"


class RunStatusChange(models.Model):
    """Each withdrawal and restore of a run, for its public history; who did it stays with the moderators."""

    class Action(models.TextChoices):
        WITHDRAWN = "withdrawn"
        RESTORED = "restored"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="status_changes")
    action = models.CharField(max_length=16, choices=Action.choices)
    reason = models.TextField(blank=True)
    at = models.DateTimeField()
    # Never shown publicly: the admin's own log says who, for moderators.
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.run} {self.action} {self.at:%Y-%m-%d}"

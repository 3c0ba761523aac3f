"""The verification domain's part of the run page and its JSON twin: the reruns and evidence section, the polled
fragment, and where the run stands with the verification policy. Registered with runs' run page from
VerificationConfig.ready (runs/extensions.py): runs draws it without importing this app."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, PermissionsMixin

from records.quorum import quorum_rule
from records.rerun import evidence_rule
from records.schema import WorkloadSpec
from runs import display
from runs.extensions import RERUN_ORIGIN, RunPageDocuments, RunSection
from runs.models import Document, Run
from runs.selectors import document_value, hardware_class_for
from verification import serializers
from verification.forms import RerunForm
from verification.policy import run_verification
from verification.quorum import quorum_size, run_quorum
from verification.reruns import may_request_rerun
from verification.selectors import RerunRow, evidence_history, live_hardware_classes, rerun_origin, rerun_rows


def reruns_section(
    run: Run, environment: dict[str, Any] | None, *, may_request_rerun: bool, workload: WorkloadSpec | None = None
) -> dict[str, Any]:
    """The run page's reruns and evidence section; `environment` and `workload` are the run's documents
    (the workload names the cases a rerun's results give by uuid)."""
    own_class = hardware_class_for(run, environment)
    reruns = rerun_rows(run, own_class)
    may_rerun = may_request_rerun and not run.withdrawn_at
    return {
        "reruns": reruns,
        "deciding_rerun": deciding_rerun(reruns),
        # A rerun's own result run: its page says whose rerun it is, and its verdict.
        RERUN_ORIGIN: rerun_origin(run),
        "axes_by_uuid": display.workload_axes(workload),
        "active_rerun": next((row.request for row in reruns if row.request.is_active), None),
        "evidence_history": evidence_history(run),
        "evidence_rule": evidence_rule(settings.RERUN_TOLERANCE),
        "quorum": run_quorum(run),
        "quorum_rule": quorum_rule(quorum_size(), distinct_hosts=settings.VERIFICATION_QUORUM_DISTINCT_HOSTS),
        "own_class": own_class,
        "own_class_label": display.hardware_class_label(own_class) or own_class,
        "rerun_form": RerunForm() if may_rerun else None,
        # Only moderators see it, on pages of their own: a cached public page would show a stale worker list.
        "live_classes": live_hardware_classes() if may_rerun else None,
    }


def reruns_fragment(run: Run, *, may_request_rerun: bool) -> dict[str, Any]:
    """The reruns section alone, as the run page polls it; it reads the environment and workload documents."""
    environment = document_value(run.environment_digest)
    workload = display.spec_of(display.typed(document_value(run.workload_digest), WorkloadSpec))
    section = reruns_section(run, environment, may_request_rerun=may_request_rerun, workload=workload)
    return {"run": run, "oob": True, **section}


def deciding_rerun(reruns: list[RerunRow]) -> RerunRow | None:
    """The rerun the run page leads with: the latest conclusive one on the run's own hardware class, the one
    the evidence rule lets decide (verification.reruns.refresh_evidence)."""
    conclusive = [row for row in reruns if row.counts_for_evidence and row.request.verdict and row.request.finished_at]
    return max(conclusive, key=lambda row: (row.request.finished_at, row.request.pk), default=None)


def run_page_section(run: Run, documents: RunPageDocuments, user: PermissionsMixin | AnonymousUser) -> dict[str, Any]:
    """The run page's reruns and evidence section, and where the run stands with the verification policy (its
    place in the queue: the sweep retires it)."""
    environment = documents.values.get("environment")
    section = reruns_section(run, environment, may_request_rerun=may_request_rerun(user), workload=documents.workload)
    return {**section, "verification": run_verification(run)}


def run_twin_members(run: Run, documents: Mapping[str, Document]) -> dict[str, Any]:
    """What the run's JSON twin carries of the domain (records.manifest.INDEX_MEMBERS): its evidence and reruns,
    and where it stands with the verification policy."""
    environment = documents.get("environment")
    reruns = reruns_section(run, environment.value if environment else None, may_request_rerun=False)
    return {**serializers.run_index_json(run, reruns), "verification": run_verification(run).as_json()}


RUN_SECTION = RunSection(name="verification", page=run_page_section, twin=run_twin_members)

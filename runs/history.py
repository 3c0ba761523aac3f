"""A run's public history: its versions and what changed, its evidence changes, its withdrawals and restores.

Also the tombstone a withdrawn run answers with (410) on its `.json` twin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse

from records.canonical import canonical_text
from runs.models import Document, Run, RunStatusChange, RunVersion
from runs.selectors import run_digests

# The parts of a run document a version names when it says what changed: each member of these.
DIFFED_MEMBERS = ("metadata", "spec")


@dataclass(frozen=True)
class VersionRow:
    version: RunVersion
    changed: list[str]
    is_current: bool
    is_first: bool


def version_rows(run: Run) -> list[VersionRow]:
    """Every version of the run, oldest first, each with the fields that differ from the version before it."""
    versions = list(run.versions.order_by("imported_at", "id"))
    documents = Document.objects.in_bulk([version.digest for version in versions])
    rows: list[VersionRow] = []
    previous: dict[str, Any] | None = None
    for version in versions:
        stored = documents.get(version.digest)
        value = stored.value if stored is not None else {}
        changed = changed_fields(previous, value) if previous is not None else []
        rows.append(VersionRow(version, changed, version.digest == run.digest, previous is None))
        previous = value
    return rows


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The dotted names of the document's fields that differ: top-level members, and each member of
    metadata and spec (a version that changed the timing says `spec.timing`, not only `spec`)."""
    changed: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if name in DIFFED_MEMBERS and isinstance(old, dict) and isinstance(new, dict):
            changed.extend(f"{name}.{field}" for field in _differing(old, new))
        elif _canonical(old) != _canonical(new):
            changed.append(name)
    return changed


def _differing(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [key for key in sorted(set(old) | set(new)) if _canonical(old.get(key)) != _canonical(new.get(key))]


def _canonical(value: Any) -> str:
    return canonical_text(value) if value is not None else ""


def evidence_changes(run: Run) -> list[Any]:
    """Every change of the run's evidence level, oldest first, each with the rerun that made it (or the version no
    rerun checked, which took it back to "reported"): verification's
    EvidenceChange rows, read through the reverse relation Django gives the run (runs never imports verification)."""
    changes = run.evidence_changes.select_related("rerun", "rerun__result_run")
    return list(changes.order_by("changed_at", "id"))


def status_changes(run: Run) -> list[RunStatusChange]:
    """Withdrawals and restores, oldest first. Who made them is for moderators: it is never loaded here."""
    return list(run.status_changes.defer("by").order_by("at", "id"))


def history_page(run: Run) -> dict[str, Any]:
    return {
        "run": run,
        "versions": version_rows(run),
        "evidence_changes": evidence_changes(run),
        "status_changes": status_changes(run),
    }


# -- the tombstone -----------------------------------------------------------------


def tombstone_json(run: Run) -> dict[str, Any]:
    """What a withdrawn run's `.json` twin answers with its 410: why, when, and the record that stays."""
    assert run.withdrawn_at is not None
    return {
        "runId": run.run_id,
        "withdrawn": {"at": _iso(run.withdrawn_at), "reason": run.withdrawn_reason},
        "digest": run.digest,
        "documents": {role: reverse("runs:document", args=[d]) for role, d in run_digests(run).items() if d},
        "history": reverse("runs:history", args=[run.run_id]),
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def history_json(context: dict[str, Any]) -> dict[str, Any]:
    """The history page's `.json` twin, from the same context; who withdrew or restored is not in it."""
    run: Run = context["run"]
    return {
        "runId": run.run_id,
        "versions": [
            {
                "digest": row.version.digest,
                "importedAt": _iso(row.version.imported_at),
                "current": row.is_current,
                "changed": row.changed,
            }
            for row in context["versions"]
        ],
        "evidenceChanges": [
            {
                "at": _iso(change.changed_at),
                "from": change.previous,
                "to": change.evidence,
                "rerun": change.rerun_id,
                "rerunRun": change.rerun.result_run.run_id if change.rerun and change.rerun.result_run else None,
                # Without a rerun: the run's version that nothing checked, which took it back to "reported".
                "version": change.version or None,
                "rule": change.rule_label,
            }
            for change in context["evidence_changes"]
        ],
        "statusChanges": [
            {"at": _iso(change.at), "action": change.action, "reason": change.reason}
            for change in context["status_changes"]
        ],
    }

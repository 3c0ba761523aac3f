# The line models spell fields as the dump's JSON does (camelCase), as records/sources/dump.py does.
# ruff: noqa: N815
"""attestations' part of a dump: approved notes, and each issue report's public status.

runs/dump_sections.py keeps the registry of a dump's sections; runs never
imports attestations, so AttestationsConfig.ready registers these two there,
and `manage.py dump` writes them and `import_runs` applies them like runs' own.
Each line holds exactly what the run page shows: a note's kind, outcome,
measured latency, GPU, text, author's display name and date; a report's
category, date and status. Never a contact e-mail, a report's text or its
resolution note, who moderated, or a note not approved. A mirror's rows
name no moderator, and hold no contact and no report text.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from pydantic import Field

from attestations.models import BODY_MAX_LENGTH, Attestation, IssueReport
from records.canonical import canonical_text
from records.sources.base import SourceRecord
from runs.dump_sections import CHUNK, DumpSection, SectionBatch, iso, timestamp

NOTES_FILE = "notes.jsonl.gz"
REPORTS_FILE = "reports.jsonl.gz"


class NoteLine(SourceRecord):
    run: str = Field(min_length=1, max_length=16)
    kind: str = Field(pattern=r"^(reproduction|note)$")
    outcome: str = Field(pattern=r"^(reproduced|not_reproduced|inconclusive|)$")
    measuredLatencyNs: float | None = Field(gt=0)
    gpu: str = Field(max_length=200)
    body: str = Field(max_length=BODY_MAX_LENGTH)
    authorName: str = Field(max_length=100)
    createdAt: str


class ReportLine(SourceRecord):
    run: str = Field(min_length=1, max_length=16)
    category: str = Field(pattern=r"^(wrong_numbers|broken_correctness|duplicate|license|other)$")
    status: str = Field(pattern=r"^(open|triaged|resolved|dismissed)$")
    reportedAt: str


def note_lines() -> Iterator[str]:
    """Approved notes by run, then date (then the order they were stored in, as the page breaks ties)."""
    approved = Attestation.objects.approved().order_by("run__run_id", "created_at", "id")
    fields = ("run__run_id", "kind", "outcome", "measured_latency_ns", "gpu", "body", "author_name", "created_at")
    for row in approved.values(*fields).iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "run": row["run__run_id"],
                "kind": row["kind"],
                "outcome": row["outcome"],
                "measuredLatencyNs": row["measured_latency_ns"],
                "gpu": row["gpu"],
                "body": row["body"],
                "authorName": row["author_name"],
                "createdAt": iso(row["created_at"]),
            }
        )


def apply_notes(batch: SectionBatch) -> None:
    lines = batch.validated(NoteLine)
    runs = batch.created_runs(line.run for _, line in lines)
    notes: list[tuple[Attestation, datetime]] = []
    for item, line in lines:
        if (line.kind == Attestation.Kind.NOTE) != (line.outcome == ""):
            raise batch.error(item, "outcome", "a reproduction has an outcome, a note none")
        if line.run in runs:
            note = Attestation(
                run_id=runs[line.run],
                kind=line.kind,
                outcome=line.outcome,
                measured_latency_ns=line.measuredLatencyNs,
                gpu=line.gpu,
                body=line.body,
                author_name=line.authorName,
                status=Attestation.Status.APPROVED,
            )
            notes.append((note, timestamp(batch, item, line.createdAt, "createdAt")))
    _create_dated(Attestation, notes)


def report_lines() -> Iterator[str]:
    """Every issue report's category, date and status, by run, then date."""
    reports = IssueReport.objects.order_by("run__run_id", "created_at", "id")
    for row in reports.values("run__run_id", "category", "status", "created_at").iterator(chunk_size=CHUNK):
        yield canonical_text(
            {
                "run": row["run__run_id"],
                "category": row["category"],
                "status": row["status"],
                "reportedAt": iso(row["created_at"]),
            }
        )


def apply_reports(batch: SectionBatch) -> None:
    """A mirror's reports have no text and no contact: only what the run page shows came with them."""
    lines = batch.validated(ReportLine)
    runs = batch.created_runs(line.run for _, line in lines)
    reports = [
        (
            IssueReport(run_id=runs[line.run], category=line.category, status=line.status, body=""),
            timestamp(batch, item, line.reportedAt, "reportedAt"),
        )
        for item, line in lines
        if line.run in runs
    ]
    _create_dated(IssueReport, reports)


def _create_dated(model: Any, rows: list[tuple[Any, datetime]]) -> None:
    """Save each in line order, then put back each row's own created_at, which saving set to now.

    One save a row, not a bulk insert: saving sends post_save, through which attestations keeps its runs'
    counts (Run.note_count and the like), so a mirror's figures come out as its writers keep them.
    """
    for row, _ in rows:
        row.save()
    for row, at in rows:
        row.created_at = at
    model.objects.bulk_update([row for row, _ in rows], ["created_at"])


NOTES = DumpSection(
    file=NOTES_FILE,
    order=30,
    count="notes",
    readme="""each approved reproduction or note, by run id then date:
                      kind, outcome, measured latency, GPU, text, the
                      author's display name, date (never an e-mail; notes
                      not approved are never in a dump)""",
    lines=note_lines,
    apply=apply_notes,
)
REPORTS = DumpSection(
    file=REPORTS_FILE,
    order=40,
    count="reports",
    readme="""each issue report's public status, by run id then date:
                      category, date and status (never its text, the
                      reporter's contact or the moderators' note)""",
    lines=report_lines,
    apply=apply_reports,
)
SECTIONS = (NOTES, REPORTS)

"""python manage.py reevaluate [RUN_ID ...]"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from records.rerun import RULE_VERSION
from runs.models import Run
from verification.reruns import reevaluate_run


class Command(BaseCommand):
    help = (
        "Apply today's evidence rule (and RERUN_TOLERANCE) to the figures the workers attested for the reruns of "
        "the runs named, or of every rerun run; each evidence level that moves is written to the run's evidence "
        "history."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="permalink ids (default: every rerun run)")

    def handle(self, *args: Any, **options: Any) -> None:
        runs = Run.objects.filter(rerun_requests__result_run__isnull=False).distinct().order_by("run_id")
        if options["run_ids"]:
            runs = Run.objects.filter(run_id__in=options["run_ids"]).order_by("run_id")
            missing = set(options["run_ids"]) - set(runs.values_list("run_id", flat=True))
            if missing:
                raise CommandError(f"no run {', '.join(sorted(missing))}")
        verdicts = moved = unattested = unverified = 0
        for run in runs:
            outcome = reevaluate_run(run)
            verdicts += outcome.changed
            unattested += outcome.unattested
            unverified += outcome.unverified
            if (change := outcome.change) is not None:
                moved += 1
                by = f"rerun #{change.rerun_id}" if change.rerun_id else f"no rerun of its version {change.version}"
                self.stdout.write(f"run {run.run_id}: {change.previous} → {change.evidence} ({by})")
        if unattested:
            # Their figures were never signed by a worker: what a run says is no evidence, so they are left alone.
            self.stdout.write(f"{unattested} rerun(s) decided before attestations were kept: left as decided")
        if unverified:
            # An envelope edited where it is stored: its figures are no one's word, so they move nothing.
            self.stderr.write(f"{unverified} rerun(s) whose stored attestation no longer verifies: left as decided")
        self.stdout.write(f"rule {RULE_VERSION}: {verdicts} verdict(s) changed, {moved} evidence level(s) moved")

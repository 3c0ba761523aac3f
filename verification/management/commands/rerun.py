"""python manage.py rerun RUN_ID [--hardware CLASS] [--wait SECONDS]"""

from __future__ import annotations

import time
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from runs.models import EVIDENCE_LABELS, INCONCLUSIVE, Run
from verification.models import RerunRequest
from verification.reruns import RerunRefusedError, may_request_rerun, queued_message, request_rerun

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Queue a controlled rerun of a run; with --wait, wait for it and print its outcome."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("run_id", help="the run's permalink id")
        parser.add_argument("--hardware", help="hardware class whose queue runs it (default: the run's own)")
        parser.add_argument("--wait", type=float, metavar="SECONDS", help="wait this long for the outcome")
        parser.add_argument("--reason", default="", help="why, for the audit log")
        parser.add_argument("--user", help="the moderator to name in the audit log (default: the system account)")

    def handle(self, *args: Any, **options: Any) -> None:
        run = Run.objects.filter(run_id=options["run_id"]).first()
        if run is None:
            raise CommandError(f"no run {options['run_id']!r}")
        try:
            rerun = request_rerun(
                run, user=self._user(options["user"]), hardware=options["hardware"], reason=options["reason"]
            )
        except RerunRefusedError as refusal:
            raise CommandError(f"run {run.run_id}: {refusal}") from None
        self.stdout.write(f"run {run.run_id}: {queued_message(rerun)}")
        if options["wait"] is None:
            return
        rerun = self._wait(rerun, options["wait"])
        if rerun.is_active:
            raise CommandError(f"rerun #{rerun.pk} is still {rerun.state} after {options['wait']:g} s")
        self.stdout.write(self._outcome(rerun))

    def _user(self, username: str | None) -> Any:
        if username is None:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None or not may_request_rerun(user):
            raise CommandError(f"{username!r} is not a user with the rerun permission")
        return user

    def _wait(self, rerun: RerunRequest, seconds: float) -> RerunRequest:
        deadline = time.monotonic() + seconds
        while rerun.is_active and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            rerun.refresh_from_db()
        return rerun

    def _outcome(self, rerun: RerunRequest) -> str:
        lines = [f"rerun #{rerun.pk}: {rerun.state}"]
        if rerun.failure_status:
            lines.append(f"failure: {rerun.failure_status}: {rerun.failure_reason}")
        if rerun.rule_version:
            level = rerun.verdict_label or EVIDENCE_LABELS[INCONCLUSIVE]
            lines.append(f"verdict: {level} ({rerun.verdict_reason}; {rerun.rule_label})")
        if rerun.result_run is not None:
            lines.append(f"result: run {rerun.result_run.run_id}")
        rerun.run.refresh_from_db()
        lines.append(f"evidence of run {rerun.run.run_id}: {rerun.run.get_evidence_display()}")
        return "\n".join(lines)

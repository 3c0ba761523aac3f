"""python manage.py decide_floors [RUN_ID ...]"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from records.floor import FLOOR_RULE_VERSION
from runs.figures import refresh_group_figures
from runs.floors import decide_floors
from runs.models import Run
from web.scopes import IMPORT


class Command(BaseCommand):
    help = (
        "Decide again, for the runs named or every run, whether a reported time is below its physics floor "
        "(its outputs written at its hardware class's peak memory bandwidth, or the source's SOL bound); a run "
        "below it is flagged and ranked after the others. Run it after a migration or a change of the rule."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="permalink ids (default: every run)")

    def handle(self, *args: Any, **options: Any) -> None:
        runs = Run.objects.all()
        if options["run_ids"]:
            runs = Run.objects.filter(run_id__in=options["run_ids"])
            missing = set(options["run_ids"]) - set(runs.values_list("run_id", flat=True))
            if missing:
                raise CommandError(f"no run {', '.join(sorted(missing))}")
        with transaction.atomic():
            groups = decide_floors(runs)
            refresh_group_figures(groups)
            IMPORT.retire_on_commit()
        flagged = runs.filter(faster_than_floor=True).count()
        self.stdout.write(
            f"floor rule {FLOOR_RULE_VERSION}: {flagged} run(s) faster than physically possible; "
            f"{len(groups)} group(s) recounted"
        )

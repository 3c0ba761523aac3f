"""python manage.py dump [--out DIR]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from runs.dumps import make_daily_dump, write_dump


class Command(BaseCommand):
    help = (
        "Write a reproducible dump of the whole index (gzip-compressed canonical JSON lines, a manifest with "
        "each file's sha256, a README). `import_runs` reads the folder back. Without --out, today's dump "
        "goes to DUMPS_DIR, where /dumps/ lists it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, help="the folder to write the dump's files into")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path | None = options["out"]
        if out is None:
            out = make_daily_dump(timezone.now().date())
        else:
            write_dump(out)
        self.stdout.write(f"wrote the dump to {out}")

"""python manage.py export_runs [--out FILE]"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandParser

from runs.selectors import iter_version_manifests


class Command(BaseCommand):
    help = (
        "Write every run version as a canonical manifest, one per line (JSONL), oldest version first. "
        "Importing the file into an empty database reproduces the same digests."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, help="file to write; standard output when left out")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path | None = options["out"]
        if out is None:
            count = write_lines(sys.stdout, iter_version_manifests())
        else:
            with out.open("w", encoding="utf-8") as handle:
                count = write_lines(handle, iter_version_manifests())
            self.stderr.write(f"wrote {count} manifests to {out}")


def write_lines(handle: IO[str], lines: Iterator[str]) -> int:
    count = 0
    for line in lines:
        handle.write(line)
        handle.write("\n")
        count += 1
    return count

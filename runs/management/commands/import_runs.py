"""python manage.py import_runs PATH... [--source SOURCE] [--redigest] [--trust-workers KEYSET]"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from records.attestation import AttestationError, PublishedKey, read_key_set_file
from records.errors import RecordError
from records.sources import SOURCES, ImportUnit, discover
from records.sources.dump import DumpAdapter, TrustedKeys
from runs.dump_sections import trusted_keys
from runs.ingest import READER_PROCESS_MIN_BYTES, ImportResult, import_unit, record_failure


class Command(BaseCommand):
    help = (
        "Import benchmark runs from source files or folders. Each file is imported whole or not at all; "
        "importing the same files again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="files or folders (folders are walked)")
        parser.add_argument("--source", choices=sorted(SOURCES), help="the source's format; detected when left out")
        parser.add_argument(
            "--redigest",
            action="store_true",
            help="for manifests whose declared digests were made by another recipe: store them under "
            "KernelIndex's digests and keep each declared value as provenance",
        )
        parser.add_argument("--trust-workers", **TRUST_WORKERS_OPTION)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            units = discover(options["paths"], source=options["source"], redigest=options["redigest"])
        except RecordError as error:
            record_failure(None, error, options["source"] or "")
            raise CommandError(str(error)) from None
        if not units:
            raise CommandError("no JSON or JSONL files found under the given paths")
        units = trusting_dumps(units, options["trust_workers"])
        failures = 0
        total = ImportResult("all", "")
        for unit in units:
            try:
                result = self._import(unit)
            except RecordError as error:
                failures += 1
                record_failure(unit, error)
                self.stderr.write(f"error: {error}\n  nothing from {unit.path} was written")
                continue
            total.add(result)
            if options["verbosity"] >= 2 or result.skipped:
                self.stdout.write(describe(result))
        if options["verbosity"] >= 1 and failures < len(units):
            self.stdout.write(f"{len(units) - failures} of {len(units)} files imported: " + summary(total))
        if failures == len(units):
            raise CommandError(
                "nothing was imported" if failures == 1 else f"all {failures} files failed; nothing was imported"
            )
        if failures:
            raise CommandError(f"{failures} of {len(units)} files failed; the other files were imported")

    def _import(self, unit: ImportUnit) -> ImportResult:
        size = unit.path.stat().st_size if unit.path.is_file() else 0
        # Below the size from which a file is read in a process of its own, a progress bar is noise.
        if size < READER_PROCESS_MIN_BYTES:
            return import_unit(unit)
        with tqdm(total=size, unit="B", unit_scale=True, desc=unit.path.name, file=sys.stderr, disable=None) as bar:
            return import_unit(unit, progress=bar.update)


TRUST_WORKERS_OPTION: dict[str, Any] = {
    "dest": "trust_workers",
    "action": "append",
    "type": Path,
    "default": [],
    "metavar": "KEYSET",
    "help": "pin the worker keys of the publisher of the dumps being imported: a key set as the publisher's "
    "/api/v1/workers serves it, or its dump's workers.jsonl(.gz), which you got from the publisher yourself "
    "(repeatable). A rerun's attestation counts when it verifies against a key of this site's own registry or "
    "a pinned one, never against the dump's own workers.jsonl.gz; any other rerun is left out, with its result "
    "run and the evidence resting on it. Pinned keys are stored as published by the dump, never as this "
    "site's workers.",
}


def pinned_keys(paths: list[Path]) -> dict[str, PublishedKey]:
    """The keys of the key sets given with --trust-workers, by key id."""
    pinned: dict[str, PublishedKey] = {}
    for path in paths:
        try:
            pinned.update(read_key_set_file(path))
        except (AttestationError, OSError, ValueError) as error:
            raise CommandError(f"--trust-workers {path}: not a key set: {error}") from None
    return pinned


def trusting_dumps(units: list[ImportUnit], pinned: list[Path]) -> list[ImportUnit]:
    """The units, each dump read with the keys whose attestations count: this site's registry and the pinned."""
    if pinned and not any(isinstance(unit.adapter, DumpAdapter) for unit in units):
        raise CommandError("--trust-workers pins the keys of a dump's publisher, and no dump is among the paths")
    trusted: TrustedKeys = trusted_keys(pinned_keys(pinned))
    return [ImportUnit(u.path, DumpAdapter(trusted)) if isinstance(u.adapter, DumpAdapter) else u for u in units]


def describe(result: ImportResult) -> str:
    return f"{result.path} [{result.source}]: " + summary(result)


def summary(result: ImportResult) -> str:
    parts = []
    if result.runs:
        counts = f"{result.created} new, {result.updated} updated, {result.unchanged} unchanged"
        parts.append(f"{plural(result.runs, 'run')} ({counts})")
    if result.definitions:
        parts.append(f"{plural(result.definitions, 'definition')} new or changed")
    if result.boards:
        parts.append(f"{plural(result.boards, 'board snapshot')} new or changed")
    if result.documents:
        parts.append(f"{plural(result.documents, 'document')} new")
    parts.extend(f"skipped {reason}" for reason in result.skipped)
    return "; ".join(parts) or "nothing new"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"

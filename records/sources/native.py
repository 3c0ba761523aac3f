"""KernelIndex's own manifests: one JSON document, a JSON array of them, or JSONL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from records.errors import RecordError
from records.identity import NATIVE_SOURCE
from records.manifest import manifest_item
from records.sources.base import Item, Progress, iter_json_lines, read_json_file

SOURCE = NATIVE_SOURCE


class ManifestAdapter:
    name = SOURCE

    def __init__(self, redigest: bool = False) -> None:
        self.redigest = redigest

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        if path.suffix == ".jsonl":
            for line, value in iter_json_lines(path, progress):
                yield manifest_item(value, path, line, redigest=self.redigest)
            return
        document = read_json_file(path)
        if isinstance(document, list):
            for index, value in enumerate(document):
                yield manifest_item(value, path, None, redigest=self.redigest, prefix=f"[{index}].")
        elif isinstance(document, dict):
            yield manifest_item(document, path, None, redigest=self.redigest)
        else:
            raise RecordError(path, None, None, "expected a manifest object or an array of manifests")


def looks_like_manifest(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and looks_like_manifest(value[0])
    return isinstance(value, dict) and "run" in value

"""Definition folders and solution.json files, read into the runnable documents a rerun hands the harness.

A definition folder (`definition.json` and `workload.jsonl`, with the PyTorch
reference inline or in `reference.py` beside them, and no `metadata.json`,
which would make it a SOL-ExecBench problem folder) becomes a `Workload`
document holding the definition and its cases exactly as a harness reads
them. A `solution.json` becomes an `Implementation` document holding the
solution with its sources, each listed in the Implementation's `artifacts` with its digest. Both
formats are the public SOL-ExecBench / FlashInfer-Bench ones, checked by
records/formats.py, the model the harness reads them with too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from records.errors import RecordError
from records.formats import Definition, check_cases, check_definition, check_solution
from records.identity import NATIVE_SOURCE, definition_title
from records.limits import MAX_STRING_CHARS
from records.manifest import Sealed
from records.schema import NAME_MAX_LENGTH, NAME_PATTERN, make_document, slugify_name
from records.sources.base import (
    CaseItem,
    DefinitionItem,
    DocumentItem,
    Item,
    Progress,
    iter_json_lines,
    read_json_file,
    seal_or_fail,
)

SOURCE = NATIVE_SOURCE
DEFINITION_FILE = "definition.json"
WORKLOAD_FILE = "workload.jsonl"
REFERENCE_FILE = "reference.py"
METADATA_FILE = "metadata.json"


# -- folders and files -----------------------------------------------------------


def is_definition_folder(path: Path) -> bool:
    return (
        path.is_dir()
        and (path / DEFINITION_FILE).is_file()
        and (path / WORKLOAD_FILE).is_file()
        and not (path / METADATA_FILE).exists()
    )


def looks_like_solution(document: Any) -> bool:
    if not isinstance(document, dict) or "sources" not in document:
        return False
    spec = document.get("spec")
    return isinstance(spec, dict) and "entry_point" in spec


def document_name(name: str) -> str:
    """The definition's or solution's own name where it is a valid metadata.name, else its slug."""
    return name if NAME_PATTERN.match(name) and len(name) <= NAME_MAX_LENGTH else slugify_name(name)[:NAME_MAX_LENGTH]


class DefinitionFolderAdapter:
    """A definition folder: its runnable Workload document, and the definition with its cases."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        if not is_definition_folder(path):
            raise RecordError(path, None, None, f"a definition folder needs {DEFINITION_FILE} and {WORKLOAD_FILE}")
        workload, definition = read_definition_folder(path, progress)
        yield DocumentItem(None, workload)
        yield definition


def read_definition_folder(path: Path, progress: Progress = None) -> tuple[Sealed, DefinitionItem]:
    """The Workload document of a definition folder and the definition it describes."""
    definition_path = path / DEFINITION_FILE
    document = read_json_file(definition_path)
    definition = check_definition(document, definition_path)
    reference = read_reference(path, document)
    if reference is not None and reference != definition.reference:
        document = {**document, "reference": reference}
    cases = read_cases(path / WORKLOAD_FILE, definition, progress)
    workload = runnable_workload(SOURCE, definition.name, document, [raw for raw, _ in cases], path)
    item = DefinitionItem(
        source=SOURCE,
        name=definition.name,
        external_id="",
        title=definition_title(definition.name),
        description=definition.description or "",
        subset="",
        hf_id="",
        axes=document.get("axes") or {},
        inputs=document["inputs"],
        outputs=document["outputs"],
        cases=[case for _, case in cases],
        references=[],
        workload_digest=workload.digest,
    )
    return workload, item


def runnable_workload(
    source: str, name: str, definition: dict[str, Any], cases: list[dict[str, Any]], path: Path
) -> Sealed:
    """The Workload document a rerun hands to the harness: the definition and every case, as read.

    A document is digested in RFC 8785 form, which sorts object keys, but the order of a definition's
    inputs and outputs is the order of the arguments a kernel takes: it is kept beside them.
    """
    order = {"inputOrder": list(definition.get("inputs") or {}), "outputOrder": list(definition.get("outputs") or {})}
    spec = {"definition": {"source": source, "name": name, "document": definition, **order}, "cases": cases}
    document = make_document("Workload", document_name(name), spec, title=definition_title(name))
    return seal_or_fail(document, "workload", path, None)


def harness_definition(workload: dict[str, Any]) -> dict[str, Any]:
    """The definition.json of a runnable Workload document, its inputs and outputs in their published order."""
    stored = workload["spec"]["definition"]
    definition = dict(stored["document"])
    for role, order in (("inputs", "inputOrder"), ("outputs", "outputOrder")):
        tensors = definition.get(role) or {}
        names = [name for name in stored.get(order) or [] if name in tensors]
        definition[role] = {name: tensors[name] for name in names + sorted(set(tensors) - set(names))}
    return definition


def read_reference(folder: Path, document: dict[str, Any]) -> str | None:
    """The definition's reference: its own field, else reference.py beside it; None when neither holds code."""
    inline = document.get("reference")
    if isinstance(inline, str) and inline.strip():
        return inline
    beside = folder / REFERENCE_FILE
    return _read_text(beside) if beside.is_file() else None


def _read_text(path: Path) -> str:
    if path.stat().st_size > MAX_STRING_CHARS * 4:
        raise RecordError(path, None, None, f"larger than the {MAX_STRING_CHARS}-character limit of one string")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordError(path, None, None, "not UTF-8 text") from None
    if len(text) > MAX_STRING_CHARS:
        raise RecordError(path, None, None, f"longer than the {MAX_STRING_CHARS}-character limit of one string")
    if "\0" in text:
        raise RecordError(path, None, None, "holds a NUL character")
    return text


def read_cases(path: Path, definition: Definition, progress: Progress) -> list[tuple[dict[str, Any], CaseItem]]:
    """Each case as written (unwrapped from a trace), and as the index keeps it."""
    checked = check_cases(list(iter_json_lines(path, progress)), definition, path)
    return [
        (raw, CaseItem(index, case.uuid, raw.get("axes") or {}, raw.get("inputs") or {}, raw.get("tolerance")))
        for index, (_, raw, case) in enumerate(checked)
    ]


# -- solutions ---------------------------------------------------------------------


class SolutionAdapter:
    """A solution.json: one Implementation document, its sources listed by digest."""

    name = SOURCE

    def read(self, path: Path, progress: Progress = None) -> Iterator[Item]:
        yield DocumentItem(None, read_solution(path))


def read_solution(path: Path) -> Sealed:
    document = read_json_file(path)
    solution = check_solution(document, path)
    spec: dict[str, Any] = {"name": solution.name}
    if solution.author:
        spec["author"] = solution.author
    if solution.description:
        spec["description"] = solution.description
    spec["definition"] = solution.definition
    spec["language"] = solution.spec.language or ", ".join(solution.spec.languages or [])
    spec["artifacts"] = [{"name": source.path, "digest": source_digest(source.content)} for source in solution.sources]
    spec["solution"] = document
    implementation = make_document("Implementation", document_name(solution.name), spec, title=solution.name)
    return seal_or_fail(implementation, "implementation", path, None)


def source_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()

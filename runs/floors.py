"""Physics floors of stored runs: gathers what records.floor needs from the rows and stores its decision.

A run's floors come from the definition it ran (its Workload document's own copy where the manifest carries one,
else the stored Definition and its cases), its hardware class's bandwidth (records.hardware), and the source's
SOL bound per case on that class (the definition's "SOL bound" reference row). Every writer that adds or changes
runs, or a definition they ran, calls decide_floors in its transaction (the importer; manage.py reevaluate
--floors for runs stored before a rule changed), then recounts the groups it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet

from records.canonical import parse_json
from records.floor import CaseFloor, FloorInputs, run_breach, run_case_floors
from records.hardware import hardware_class, hardware_class_of, memory_bandwidth_of
from runs.models import Definition, Document, ReferenceRow, Run, WorkloadCase

CHUNK = 500


class FloorReader:
    """The inputs of runs' floors, each document and definition read once per pass."""

    def __init__(self) -> None:
        self.documents: dict[str, Any] = {}
        self.definitions: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.sol: dict[tuple[int, str], list[Any]] = {}
        self.made: dict[tuple[str, int | None, str], FloorInputs | None] = {}

    def load(self, digests: Iterable[str]) -> None:
        """Read these documents in one query (those not read yet)."""
        wanted = {digest for digest in digests if digest and digest not in self.documents}
        for digest, canonical in Document.objects.filter(digest__in=wanted).values_list("digest", "canonical"):
            self.documents[digest] = parse_json(canonical)

    def document(self, digest: str) -> Any:
        if digest and digest not in self.documents:
            self.load([digest])
        return self.documents.get(digest)

    def hardware_class(self, run: Run) -> str:
        environment = self.document(run.environment_digest)
        if isinstance(environment, Mapping):
            return hardware_class(environment["spec"]["hardware"])
        return hardware_class_of(run.hardware)

    def inputs(self, run: Run) -> FloorInputs | None:
        """What the run's floors are made of; None when the definition it ran is not known here. Runs of one
        workload, definition and class share them (and the floors worked out from them)."""
        name = self.hardware_class(run)
        key = (run.workload_digest, run.definition_id, name)
        if key not in self.made:
            self.made[key] = self._inputs(run, name)
        return self.made[key]

    def _inputs(self, run: Run, name: str) -> FloorInputs | None:
        workload = self.document(run.workload_digest)
        spec = workload.get("spec") if isinstance(workload, Mapping) else None
        reference = spec.get("definition") if isinstance(spec, Mapping) else None
        embedded = reference.get("document") if isinstance(reference, Mapping) else None
        stored = self._definition(run.definition_id) if run.definition_id else None
        if isinstance(embedded, Mapping):
            definition, cases = embedded, (spec or {}).get("cases") or []
        elif stored is not None:
            definition, cases = stored
        else:
            return None
        sol = self._sol(run.definition_id, name) if run.definition_id else []
        return FloorInputs(definition, cases if isinstance(cases, list) else [], memory_bandwidth_of(name), sol)

    def _definition(self, pk: int) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        if pk not in self.definitions:
            definition = Definition.objects.filter(pk=pk).only("axes", "outputs").first()
            if definition is None:
                return None
            cases = [
                {"uuid": uuid, "axes": axes}
                for uuid, axes in definition.cases.order_by("index").values_list("uuid", "axes")
            ]
            self.definitions[pk] = ({"axes": definition.axes, "outputs": definition.outputs}, cases)
        return self.definitions[pk]

    def _sol(self, definition_id: int, name: str) -> list[Any]:
        """The source's SOL bound per case, from the definition's SOL row on the run's own class (a bound
        measured on another GPU bounds nothing here)."""
        key = (definition_id, name)
        if key not in self.sol:
            rows = ReferenceRow.objects.filter(definition_id=definition_id, kind=ReferenceRow.Kind.SOL_BOUND)
            self.sol[key] = next((list(row.per_case_ns) for row in rows if hardware_class_of(row.hardware) == name), [])
        return self.sol[key]


def decide_floors(runs: QuerySet[Run]) -> set[int]:
    """Decide and store whether each of these runs reported a time below its floor; returns the groups of the
    runs whose decision changed (their figures and #1 are to be recounted)."""
    reader = FloorReader()
    changed: list[Run] = []
    fields = ("digest", "workload_digest", "environment_digest", "hardware", "definition_id", "group_id")
    queryset = runs.only(*fields, "faster_than_floor", "floor_breach").order_by("pk")
    chunk: list[Run] = []
    for run in queryset.iterator(chunk_size=CHUNK):
        chunk.append(run)
        if len(chunk) >= CHUNK:
            changed += _decide_chunk(chunk, reader)
            chunk = []
    changed += _decide_chunk(chunk, reader)
    Run.objects.bulk_update(changed, ["faster_than_floor", "floor_breach"], batch_size=CHUNK)
    return {run.group_id for run in changed}


def _decide_chunk(runs: list[Run], reader: FloorReader) -> list[Run]:
    reader.load(digest for run in runs for digest in (run.workload_digest, run.environment_digest))
    # A run document is read only where a floor can be had: most runs of a large import have none.
    judged = {run.pk: inputs for run in runs if (inputs := reader.inputs(run)) is not None and inputs.may_floor}
    reader.load(run.digest for run in runs if run.pk in judged)
    changed = []
    for run in runs:
        inputs = judged.get(run.pk)
        spec = (reader.document(run.digest) or {}).get("spec") or {} if inputs is not None else {}
        breach = run_breach(spec, inputs) if inputs is not None else None
        decided = breach.as_json() if breach is not None else None
        if run.faster_than_floor != (breach is not None) or run.floor_breach != decided:
            run.faster_than_floor, run.floor_breach = breach is not None, decided
            changed.append(run)
    # Run documents are read once each: forget them, keep the shared ones (workloads, environments).
    for run in runs:
        reader.documents.pop(run.digest, None)
    return changed


def case_floors(run: Run, run_spec: Mapping[str, Any]) -> list[CaseFloor | None]:
    """The floor of each case the run reports, for its page's per-case table (None where a case has none)."""
    if not run_spec.get("cases"):
        return []
    inputs = FloorReader().inputs(run)
    return run_case_floors(run_spec, inputs) if inputs is not None else []


def definition_floors(
    definition: Definition, cases: list[WorkloadCase], references: list[ReferenceRow], products: Iterable[str]
) -> dict[str, list[CaseFloor | None]]:
    """Each case's floor on each of these GPUs (the definition's reference rows' and groups'), by product name;
    a product whose class has no floor for any case is left out."""
    shape = {"axes": definition.axes, "outputs": definition.outputs}
    known = [{"uuid": case.uuid, "axes": case.axes} for case in cases]
    floors: dict[str, list[CaseFloor | None]] = {}
    for product in sorted(set(products)):
        name = hardware_class_of(product)
        sol: list[Any] = next(
            (
                ref.per_case_ns
                for ref in references
                if ref.kind == ReferenceRow.Kind.SOL_BOUND and hardware_class_of(ref.hardware) == name
            ),
            [],
        )
        per_case = FloorInputs(shape, known, memory_bandwidth_of(name), sol).definition_floors()
        if any(per_case):
            floors[product] = per_case
    return floors

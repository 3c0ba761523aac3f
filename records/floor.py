"""The physics floor: a lower bound on any correct kernel's time for one case of a definition on a hardware class.

A kernel cannot finish before it has written its outputs, and it cannot write them faster than the class's peak
memory bandwidth (records.hardware: each class's figure, with the datasheet it comes from). Where the source
publishes a speed-of-light bound per case (SOL-ExecBench's `sol_ms`, stored as the definition's "SOL bound"
reference row on the source's GPU), the floor is the larger of the two. A timing below the floor is not a fast
kernel but a wrong number: such a run is flagged, never ranked #1, and verified first.

A floor must never flag an honest kernel, so anything that is not known gives no floor rather than a guess: an
unknown dtype, an axis the case does not give, an expression that does not resolve, a class without a figure.
Pure Python, no Django; every function takes plain values and never raises on what a stranger wrote.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness.wire.exchange import DTYPE_BYTES
from records.axes import evaluate_expression, expression_names
from records.formats import DTYPE_ALIASES
from records.hardware import MemoryBandwidth

# The version of the rule a stored decision was made by (runs.models.Run.floor_breach records it): a command
# re-applies a new rule on purpose (manage.py reevaluate --floors).
FLOOR_RULE_VERSION = 1
# Bytes beyond any memory a machine has (2**60, an exbibyte): a case that claims more is not a real case, and a
# floor made from it would flag every run of it.
MAX_OUTPUT_BYTES = 2**60
# Axis expressions are evaluated before their sizes are known: a large power ("2 ** 2 ** 40"), or a long chain
# of products, would take forever. A floor evaluates only short expressions whose powers raise to a small literal,
# one axis at a time, and gives up on the first value beyond any real size.
MAX_EXPONENT = 64
MAX_POWERS = 2
MAX_EXPRESSION_CHARS = 256
SOL_SOURCE = "the source's speed-of-light bound for this case"
SOL_SOURCES = "the source's speed-of-light bounds for the cases"
# Statistics that are at least the geometric mean of the cases' times (an arithmetic mean is never below the
# geometric one; SOL-ExecBench's "mean" latency is their geometric mean). Any other aggregate is compared with
# the smallest case's floor, which no order statistic can be below.
MEAN_STATISTICS = frozenset({"mean", "geomean", "geometric_mean"})


@dataclass(frozen=True)
class CaseFloor:
    """A case's floor, and what it is made of: the outputs' bytes at the bandwidth, the source's SOL bound."""

    floor_ns: float
    output_bytes: int | None
    written_ns: float | None
    sol_ns: float | None
    source: str

    def as_json(self) -> dict[str, Any]:
        return {
            "floorNs": self.floor_ns,
            "outputBytes": self.output_bytes,
            "writtenNs": self.written_ns,
            "solNs": self.sol_ns,
            "source": self.source,
        }


@dataclass(frozen=True)
class Breach:
    """A reported time below its floor: which case (or the run's aggregate), by how much, and whose floor."""

    case: str
    latency_ns: float
    floor_ns: float
    source: str

    @property
    def times_below(self) -> float:
        """How many times faster than the floor the claim is (2.0: twice as fast as physically possible)."""
        return self.floor_ns / self.latency_ns

    def as_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "latencyNs": self.latency_ns,
            "floorNs": self.floor_ns,
            "timesBelow": round(self.times_below, 4),
            "source": self.source,
            "rule": FLOOR_RULE_VERSION,
        }


def dtype_bytes(dtype: Any) -> int | None:
    """Bytes per element of a definition's dtype name (the harness's one table), None for one it does not know."""
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(DTYPE_ALIASES.get(dtype, dtype))


def case_axis_values(axes: Mapping[str, Any], case_axes: Mapping[str, Any]) -> dict[str, int] | None:
    """Every axis's value for one case (constants, the case's variables, expressions), or None when one is
    missing, not a whole number, negative, or an expression this module will not evaluate."""
    if not isinstance(axes, Mapping) or not isinstance(case_axes, Mapping):
        return None
    constants: dict[str, int] = {}
    expressions: dict[str, str] = {}
    for name, axis in axes.items():
        if not isinstance(axis, Mapping):
            return None
        if axis.get("type") == "const":
            constants[name] = axis.get("value")  # type: ignore[assignment]  # checked with the others below
        elif axis.get("type") == "expr":
            expressions[name] = axis.get("expression")  # type: ignore[assignment]
    variables = {name: value for name, value in case_axes.items() if name not in constants and name not in expressions}
    if not all(_whole(value) for value in [*constants.values(), *variables.values()]):
        return None
    if not all(_cheap(text) for text in expressions.values()):
        return None
    return _resolved({**constants, **variables}, expressions)


def _resolved(values: dict[str, int], expressions: Mapping[str, str]) -> dict[str, int] | None:
    """records.axes.resolve_axes, bounded: each expression's value is checked before the next one may use it."""
    pending = dict(expressions)
    while pending:
        ready = {name: text for name, text in pending.items() if expression_names(text) <= values.keys()}
        if not ready:
            return None
        for name, text in ready.items():
            try:
                value = evaluate_expression(text, values)
            except (ValueError, KeyError, ArithmeticError, RecursionError):
                return None
            if not _whole(value):
                return None
            values[name] = value
            del pending[name]
    return values


def output_bytes(outputs: Mapping[str, Any], values: Mapping[str, int]) -> int | None:
    """The bytes a case's outputs take (each output's shape in axis names or sizes, times its dtype's size), or
    None when an output's dtype or a dimension is unknown, or the total is beyond any machine's memory."""
    if not isinstance(outputs, Mapping) or not outputs:
        return None
    total = 0
    for spec in outputs.values():
        if not isinstance(spec, Mapping):
            return None
        size = dtype_bytes(spec.get("dtype"))
        shape = spec.get("shape")
        if size is None or not (shape is None or isinstance(shape, list)):
            return None
        for dimension in shape or ():
            extent = _extent(dimension, values)
            if extent is None:
                return None
            size *= extent
            if size > MAX_OUTPUT_BYTES:
                return None
        total += size
    return total if total <= MAX_OUTPUT_BYTES else None


def case_floor(
    definition: Mapping[str, Any],
    case_axes: Mapping[str, Any],
    bandwidth: MemoryBandwidth | None,
    sol_ns: float | None = None,
) -> CaseFloor | None:
    """One case's floor on a class: its outputs written at the class's bandwidth, or the source's SOL bound for
    the case where that is larger; None when neither is known."""
    written: float | None = None
    size: int | None = None
    if bandwidth is not None and isinstance(definition, Mapping):
        values = case_axis_values(definition.get("axes") or {}, case_axes)
        size = output_bytes(definition.get("outputs") or {}, values) if values is not None else None
        if size is not None:
            written = size / bandwidth.bytes_per_second * 1e9
    sol = sol_ns if _positive(sol_ns) else None
    if written is None and sol is None:
        return None
    if sol is not None and (written is None or sol > written):
        return CaseFloor(sol, size, written, sol, SOL_SOURCE)
    assert written is not None
    assert bandwidth is not None
    return CaseFloor(written, size, written, sol, f"its outputs written at {bandwidth.label} ({bandwidth.source})")


def worst_breach(claims: Iterable[tuple[str, Any, CaseFloor | None]]) -> Breach | None:
    """Of (case label, reported latency in ns, the case's floor), the claim furthest below its floor; None when
    every claim is at or above its floor, or none could be judged."""
    breaches = [
        Breach(label, float(latency), floor.floor_ns, floor.source)
        for label, latency, floor in claims
        if floor is not None and _positive(latency) and latency < floor.floor_ns
    ]
    return max(breaches, key=lambda breach: breach.times_below, default=None)


def aggregate_floor(floors: Sequence[CaseFloor | None], statistic: str) -> CaseFloor | None:
    """The floor of a run's aggregate latency over these cases (every case of the run): the geometric mean of
    the cases' floors for a mean, the smallest case's for any other statistic; None unless every case has one."""
    if not floors or any(floor is None for floor in floors):
        return None
    known = [floor for floor in floors if floor is not None]
    if statistic in MEAN_STATISTICS:
        value = math.exp(sum(math.log(floor.floor_ns) for floor in known) / len(known))
        # Each case's floor is its SOL bound or its outputs written at the bandwidth: say which, once each.
        sources = sorted({SOL_SOURCES if floor.source == SOL_SOURCE else floor.source for floor in known})
        return CaseFloor(value, None, None, None, f"the geometric mean of its cases' floors ({'; '.join(sources)})")
    lowest = min(known, key=lambda floor: floor.floor_ns)
    return CaseFloor(lowest.floor_ns, None, None, None, f"its fastest case's floor ({lowest.source})")


def _extent(dimension: Any, values: Mapping[str, int]) -> int | None:
    if isinstance(dimension, bool):
        return None
    if isinstance(dimension, int):
        return dimension if dimension >= 0 else None
    if isinstance(dimension, str):
        if dimension.isdigit():
            return int(dimension)
        value = values.get(dimension)
        return value if isinstance(value, int) else None
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_OUTPUT_BYTES


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _cheap(expression: Any) -> bool:
    """Whether an axis expression is short and every `**` in it raises to a small literal exponent."""
    if not isinstance(expression, str) or len(expression) > MAX_EXPRESSION_CHARS:
        return False
    try:
        expression_names(expression)  # integer arithmetic on names, or AxisExpressionError
        tree = ast.parse(expression, mode="eval")
    except (ValueError, SyntaxError, RecursionError):
        return False
    powers = [node for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)]
    return len(powers) <= MAX_POWERS and all(
        isinstance(power.right, ast.Constant)
        and isinstance(power.right.value, int)
        and 0 <= power.right.value <= MAX_EXPONENT
        for power in powers
    )


# -- a run's cases -------------------------------------------------------------------

# The case statuses whose times are claims: a case that failed may stop early, and its time says nothing.
TIMED_STATUSES = frozenset({"passed", "measured"})


@dataclass(frozen=True)
class FloorInputs:
    """What a run's floors are made of, as plain values: the definition it ran (`axes`, `outputs`), the
    definition's cases in order (each a {"uuid", "axes"}), the class's bandwidth, and the source's SOL bound
    per case on the run's class (by the case's index; empty where the source publishes none)."""

    definition: Mapping[str, Any]
    cases: Sequence[Mapping[str, Any]]
    bandwidth: MemoryBandwidth | None
    sol_ns: Sequence[Any] = ()

    def floor_of(self, case: Mapping[str, Any]) -> CaseFloor | None:
        """The floor of a run's case (records.schema.CaseResult as a dict): its axes are its own, over those of
        the definition's case it names by uuid (`workload`), whose index finds its SOL bound."""
        index = self._index_of(case.get("workload"))
        known = self.cases[index].get("axes") if index is not None else None
        own = case.get("axes")
        axes = {**(known if isinstance(known, Mapping) else {}), **(own if isinstance(own, Mapping) else {})}
        return case_floor(self.definition, axes, self.bandwidth, self._sol(index))

    @property
    def may_floor(self) -> bool:
        """Whether any case can have a floor here: a bandwidth, or a SOL bound (else no run need be read)."""
        return self.bandwidth is not None or any(_positive(value) for value in self.sol_ns)

    def definition_floors(self) -> list[CaseFloor | None]:
        """Each of the definition's cases' floor, in order (worked out once: every run of a file shares them)."""
        return list(self._definition_floors)

    @cached_property
    def _definition_floors(self) -> list[CaseFloor | None]:
        floors = []
        for index, case in enumerate(self.cases):
            axes = case.get("axes") if isinstance(case, Mapping) else None
            floors.append(
                case_floor(self.definition, axes if isinstance(axes, Mapping) else {}, self.bandwidth, self._sol(index))
            )
        return floors

    def _index_of(self, uuid: Any) -> int | None:
        if not isinstance(uuid, str) or not uuid:
            return None
        return next(
            (i for i, case in enumerate(self.cases) if isinstance(case, Mapping) and case.get("uuid") == uuid), None
        )

    def _sol(self, index: int | None) -> float | None:
        if index is None or index >= len(self.sol_ns):
            return None
        value = self.sol_ns[index]
        return float(value) if _positive(value) else None


def run_case_floors(run_spec: Mapping[str, Any], inputs: FloorInputs) -> list[CaseFloor | None]:
    """The floor of each case the run reports (its `cases`, in order; None where a case has no floor)."""
    cases = run_spec.get("cases") if isinstance(run_spec, Mapping) else None
    if not isinstance(cases, list):
        return []
    return [inputs.floor_of(case) if isinstance(case, Mapping) else None for case in cases]


def run_breach(run_spec: Mapping[str, Any], inputs: FloorInputs) -> Breach | None:
    """The run's claim furthest below its floor: any timed case's latency, or its headline latency against the
    floor of the cases it covers (its own cases, else every case of the definition); None when none is below."""
    if not isinstance(run_spec, Mapping) or run_spec.get("status") not in TIMED_STATUSES:
        return None
    given = run_spec.get("cases")
    cases: list[Any] = given if isinstance(given, list) else []
    floors = run_case_floors(run_spec, inputs)
    claims: list[tuple[str, Any, CaseFloor | None]] = []
    for position, (case, floor) in enumerate(zip(cases, floors, strict=True), start=1):
        if isinstance(case, Mapping) and case.get("status") in TIMED_STATUSES:
            claims.append((_case_label(position, case), case.get("latencyNs"), floor))
    all_timed = all(isinstance(case, Mapping) and case.get("status") in TIMED_STATUSES for case in cases)
    statistic, headline = _headline(run_spec)
    if all_timed and statistic:
        covered = floors if cases else inputs.definition_floors()
        claims.append((f"the run's {statistic} over its cases", headline, aggregate_floor(covered, statistic)))
    return worst_breach(claims)


def _headline(run_spec: Mapping[str, Any]) -> tuple[str, Any]:
    timing = run_spec.get("timing")
    if not isinstance(timing, Mapping) or not isinstance(timing.get("latencyNs"), Mapping):
        return "", None
    statistic = timing.get("primaryStatistic")
    if not isinstance(statistic, str):
        return "", None
    return statistic, timing["latencyNs"].get(statistic)


def _case_label(position: int, case: Mapping[str, Any]) -> str:
    axes = case.get("axes")
    named = ", ".join(f"{name}={value}" for name, value in axes.items()) if isinstance(axes, Mapping) else ""
    return f"case {position}" + (f" ({named})" if named else "")

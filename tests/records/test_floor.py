"""records/floor.py: a case's physics floor from its outputs and the class's bandwidth, or the source's SOL bound;
anything unknown or hostile gives no floor, never an exception."""

from __future__ import annotations

from typing import Any

import pytest

from records.floor import (
    FloorInputs,
    aggregate_floor,
    case_axis_values,
    case_floor,
    output_bytes,
    run_breach,
    run_case_floors,
)
from records.hardware import (
    CPU_BANDWIDTH,
    H100_BANDWIDTH,
    HARDWARE_CLASSES,
    MemoryBandwidth,
    memory_bandwidth_of,
)

TB = 1e12
RMSNORM: dict[str, Any] = {
    "axes": {
        "batch_size": {"type": "var"},
        "hidden_size": {"type": "const", "value": 2048},
        "half": {"type": "expr", "expression": "hidden_size // 2"},
    },
    "outputs": {
        "output": {"dtype": "bfloat16", "shape": ["batch_size", "hidden_size"]},
        "scale": {"dtype": "float32", "shape": ["batch_size", "half"]},
        "count": {"dtype": "int64", "shape": None},
    },
}
ONE_TB_PER_S = MemoryBandwidth(1 * TB, "a test figure")


def test_the_bytes_of_a_cases_outputs_come_from_its_axes_and_dtypes() -> None:
    values = case_axis_values(RMSNORM["axes"], {"batch_size": 4})
    assert values == {"batch_size": 4, "hidden_size": 2048, "half": 1024}
    assert output_bytes(RMSNORM["outputs"], values) == 4 * 2048 * 2 + 4 * 1024 * 4 + 8


def test_the_floor_is_the_outputs_written_at_the_bandwidth() -> None:
    floor = case_floor(RMSNORM, {"batch_size": 4}, ONE_TB_PER_S)
    assert floor is not None
    assert floor.floor_ns == pytest.approx((4 * 2048 * 2 + 4 * 1024 * 4 + 8) / TB * 1e9)
    assert floor.source == "its outputs written at 1 TB/s (a test figure)"


def test_the_sources_sol_bound_is_the_floor_where_it_is_larger_and_only_then() -> None:
    written = case_floor(RMSNORM, {"batch_size": 4}, ONE_TB_PER_S)
    assert written is not None
    larger = case_floor(RMSNORM, {"batch_size": 4}, ONE_TB_PER_S, sol_ns=1000.0)
    assert larger is not None
    assert (larger.floor_ns, larger.source) == (1000.0, "the source's speed-of-light bound for this case")
    smaller = case_floor(RMSNORM, {"batch_size": 4}, ONE_TB_PER_S, sol_ns=0.001)
    assert smaller == case_floor(RMSNORM, {"batch_size": 4}, ONE_TB_PER_S, sol_ns=0.001)
    assert smaller is not None
    assert smaller.floor_ns == written.floor_ns
    only_sol = case_floor(RMSNORM, {"batch_size": 4}, None, sol_ns=5.0)
    assert only_sol is not None
    assert only_sol.floor_ns == 5.0


@pytest.mark.parametrize(
    ("definition", "case_axes"),
    [
        (RMSNORM, {}),  # the case does not give its variable axis
        (RMSNORM, {"batch_size": -1}),
        (RMSNORM, {"batch_size": "4"}),
        (RMSNORM, {"batch_size": True}),
        (RMSNORM, {"batch_size": 10**30}),  # beyond any memory
        ({**RMSNORM, "outputs": {"out": {"dtype": "float128", "shape": ["batch_size"]}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {"out": {"dtype": None, "shape": ["batch_size"]}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {"out": {"dtype": "float32", "shape": ["nowhere"]}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {"out": {"dtype": "float32", "shape": "batch_size"}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {"out": {"dtype": "float32", "shape": [2**40, 2**40]}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {"out": {"dtype": "float32", "shape": [-3]}}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": {}}, {"batch_size": 4}),
        ({**RMSNORM, "outputs": ["not", "a", "mapping"]}, {"batch_size": 4}),
        ({"axes": {"n": {"type": "expr", "expression": "2 ** 2 ** 40"}}, "outputs": RMSNORM["outputs"]}, {}),
        ({"axes": {"n": {"type": "expr", "expression": "((m ** 64) ** 64) ** 64"}}, "outputs": {}}, {"m": 3}),
        ({"axes": {"n": {"type": "expr", "expression": "m * " * 100 + "m"}}, "outputs": {}}, {"m": 3}),
        ({"axes": {"n": {"type": "expr", "expression": "__import__('os')"}}, "outputs": {}}, {}),
        ({"axes": {"n": {"type": "expr", "expression": "m / 0"}}, "outputs": {}}, {"m": 3}),
        ({"axes": {"a": {"type": "expr", "expression": "b"}, "b": {"type": "expr", "expression": "a"}}}, {}),
        ({"axes": "nonsense", "outputs": RMSNORM["outputs"]}, {"batch_size": 4}),
        ("not a definition", {"batch_size": 4}),
    ],
)
def test_what_is_not_known_or_hostile_gives_no_floor_and_never_raises(definition: Any, case_axes: Any) -> None:
    assert case_floor(definition, case_axes, ONE_TB_PER_S) is None


def test_a_chain_of_expressions_stops_at_the_first_value_beyond_any_size() -> None:
    axes = {
        "a": {"type": "expr", "expression": "m ** 64"},
        "b": {"type": "expr", "expression": "a ** 64"},
        "c": {"type": "expr", "expression": "b ** 64"},
    }
    assert case_axis_values(axes, {"m": 2**40}) is None


def test_a_class_without_a_published_figure_has_no_floor_and_every_cpu_class_has_the_generous_one() -> None:
    assert memory_bandwidth_of("nvidia-v100") is None  # no figure checked here: no floor, never a guess
    assert memory_bandwidth_of("some-new-accelerator-9") is None
    assert memory_bandwidth_of("cpu") == memory_bandwidth_of("cpu-amd-epyc-7b13") == CPU_BANDWIDTH
    assert memory_bandwidth_of("nvidia-h100") == H100_BANDWIDTH
    assert H100_BANDWIDTH.label == "3.9 TB/s"


def test_every_figure_names_its_source_and_a_cpu_bound_is_above_every_gpu() -> None:
    figures = [hardware.memory_bandwidth for hardware in HARDWARE_CLASSES if hardware.memory_bandwidth]
    assert {round(figure.bytes_per_second / 1e9) for figure in figures} >= {3900, 4800, 8000, 2039}
    assert all(figure.source for figure in figures)
    assert all(
        CPU_BANDWIDTH.bytes_per_second > figure.bytes_per_second for figure in figures if figure != CPU_BANDWIDTH
    )


def demo_run(latencies: list[float], headline: float, statistic: str = "median") -> dict[str, Any]:
    return {
        "status": "passed",
        "timing": {"latencyNs": {statistic: headline}, "primaryStatistic": statistic},
        "cases": [
            {"status": "passed", "workload": f"u{i}", "latencyNs": latency} for i, latency in enumerate(latencies)
        ],
    }


INPUTS = FloorInputs(RMSNORM, [{"uuid": f"u{i}", "axes": {"batch_size": 2**i * 1024}} for i in range(3)], ONE_TB_PER_S)


def test_a_run_is_judged_by_its_case_furthest_below_its_floor() -> None:
    floors = [floor.floor_ns for floor in run_case_floors(demo_run([1, 1, 1], 1), INPUTS) if floor]
    assert len(floors) == 3
    honest = demo_run([f * 2 for f in floors], floors[-1] * 2)
    assert run_breach(honest, INPUTS) is None
    breach = run_breach(demo_run([floors[0] * 2, floors[1] / 2, floors[2] / 4], floors[2]), INPUTS)
    assert breach is not None
    assert (breach.case, breach.times_below) == ("case 3", pytest.approx(4.0))


def test_a_failed_case_or_run_claims_no_time() -> None:
    run = demo_run([1.0, 1.0, 1.0], 1.0)
    run["status"] = "failed"
    assert run_breach(run, INPUTS) is None
    run = demo_run([1e9, 1e9, 0.001], 1e9)
    run["cases"][2]["status"] = "failed"
    assert run_breach(run, INPUTS) is None


def test_a_run_without_cases_is_judged_by_its_mean_against_the_geometric_mean_of_the_definitions_floors() -> None:
    floors = [floor.floor_ns for floor in INPUTS.definition_floors() if floor]
    geometric = (floors[0] * floors[1] * floors[2]) ** (1 / 3)
    headline_only = {"status": "passed", "timing": {"latencyNs": {"mean": geometric * 0.9}, "primaryStatistic": "mean"}}
    breach = run_breach(headline_only, INPUTS)
    assert breach is not None
    assert breach.floor_ns == pytest.approx(geometric)
    headline_only["timing"]["latencyNs"]["mean"] = geometric * 1.01
    assert run_breach(headline_only, INPUTS) is None
    # A median is compared with the fastest case's floor, which no order statistic can be below.
    median = aggregate_floor(INPUTS.definition_floors(), "median")
    assert median is not None
    assert median.floor_ns == min(floors)


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"status": "passed"},
        {"status": "passed", "timing": "fast"},
        {"status": "passed", "timing": {"latencyNs": {"mean": -1}, "primaryStatistic": "mean"}},
        {"status": "passed", "timing": {"latencyNs": {"mean": float("nan")}, "primaryStatistic": "mean"}},
        {"status": "passed", "cases": "all of them"},
        {"status": "passed", "cases": [None, 3, {"status": "passed", "latencyNs": "0"}]},
    ],
)
def test_a_malformed_run_is_never_flagged_and_never_raises(spec: dict[str, Any]) -> None:
    assert run_breach(spec, INPUTS) is None

"""Random inputs by protocol: the sources' dtype ranges, and SOL-ExecBench's rules on input names.

The name rules are checked on published SOL-ExecBench definitions (copied into
tests/harness/data/sol-execbench/, with the sample pack's problem 213), each
built through harness.parent.job and harness.judge.tensors as the judge builds them, using
the definition's smallest case.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import torch

from harness.judge.tensors import FLOAT4_VALUES, NORMAL_CHUNK, build_inputs, unpack_float4
from harness.parent.formats import Solution, load_definition, load_workload
from harness.parent.job import Inputs, build_job
from tests.conftest import SAMPLE_DATA

PROBLEMS = Path(__file__).resolve().parent / "data" / "sol-execbench"
SOLUTION = Solution.model_validate(
    {
        "name": "s",
        "definition": "d",
        "spec": {"language": "python", "entry_point": "m.py::run"},
        "sources": [{"path": "m.py", "content": ""}],
    }
)


def smallest_case(folder: Path) -> dict[str, Any]:
    """The job's case with the fewest input elements, as the child receives it."""
    # The published definitions come without their reference; any file stands in for it.
    path, definition, source, name = load_definition(folder, folder / "definition.json")
    cases = load_workload(folder / "workload.jsonl", definition)
    job, _ = build_job(
        Inputs(path, definition, source, name, folder / "workload.jsonl", cases, SOLUTION), {}, None, str
    )
    return min(job["cases"], key=lambda case: sum(math.prod(spec["shape"] or [1]) for spec in case["inputs"].values()))


def sol_inputs(problem: str) -> dict[str, Any]:
    folder = SAMPLE_DATA / "sol-execbench" / "problems" / problem if problem == "213" else PROBLEMS / problem
    return build_inputs(smallest_case(folder), "cpu", None, rule="sol-execbench")


def random_case(*specs: tuple[str, list[int], str], op_type: str | None = None) -> dict[str, Any]:
    inputs = {name: {"source": "random", "shape": shape, "dtype": dtype} for name, shape, dtype in specs}
    return {"uuid": "u", "seed": 2026, "op_type": op_type, "axes": {}, "inputs": inputs}


DTYPE_CASE = random_case(
    ("a", [64, 64], "int8"),
    ("b", [64, 64], "int16"),
    ("c", [64, 64], "int32"),
    ("d", [64, 64], "int64"),
    ("e", [64, 64], "float8_e4m3fn"),
    ("f", [64, 64], "float8_e5m2"),
    ("g", [64, 32], "float4_e2m1fn_x2"),
    ("h", [64, 64], "bool"),
    ("x", [64, 64], "bfloat16"),
)


@pytest.mark.parametrize("rule", ["sol-execbench", "flashinfer-bench"])
def test_the_sources_draw_integers_over_their_ranges(rule: str) -> None:
    inputs = build_inputs(DTYPE_CASE, "cpu", None, rule=rule)

    assert (int(inputs["a"].min()), int(inputs["a"].max())) == (-128, 127)
    for name in "bcd":
        assert -1024 <= int(inputs[name].min()) < -1000
        assert 1000 < int(inputs[name].max()) <= 1023
    assert inputs["h"].dtype == torch.bool and 0 < int(inputs["h"].sum()) < 64 * 64


@pytest.mark.parametrize("rule", ["sol-execbench", "flashinfer-bench"])
def test_the_sources_clamp_fp8_to_two(rule: str) -> None:
    inputs = build_inputs(DTYPE_CASE, "cpu", None, rule=rule)

    for name, dtype in (("e", torch.float8_e4m3fn), ("f", torch.float8_e5m2)):
        values = inputs[name].float()
        assert inputs[name].dtype == dtype
        assert float(values.abs().max()) == 2.0
        assert float(values.std()) > 0.5


# randn rounded to e2m1: beyond ±2.5 somewhere in 4096 draws, unless clamped to ±2 as FlashInfer-Bench does.
@pytest.mark.parametrize(
    ("rule", "largest"), [("sol-execbench", (3.0, 6.0)), ("flashinfer-bench", (2.0, 2.0)), ("kernelindex", (3.0, 6.0))]
)
def test_random_fp4_has_the_declared_packed_shape_and_e2m1_values(rule: str, largest: tuple[float, float]) -> None:
    packed = build_inputs(DTYPE_CASE, "cpu", None, rule=rule)["g"]
    values = unpack_float4(packed)

    assert packed.dtype == torch.float4_e2m1fn_x2 and list(packed.shape) == [64, 32]
    assert list(values.shape) == [64, 64]
    assert set(values.abs().unique().tolist()) <= set(FLOAT4_VALUES)
    assert largest[0] <= float(values.abs().max()) <= largest[1]
    assert bool((values < 0).any()) and bool((values > 0).any())


def test_kernelindex_keeps_small_non_negative_integers_and_randn() -> None:
    inputs = build_inputs(DTYPE_CASE, "cpu", None)

    assert int(inputs["c"].min()) >= 0 and int(inputs["c"].max()) < 64
    assert float(inputs["x"].float().std()) == pytest.approx(1.0, abs=0.05)


def test_a_seed_given_replaces_the_cases_own() -> None:
    own = build_inputs(DTYPE_CASE, "cpu", None, rule="sol-execbench")
    same = build_inputs(DTYPE_CASE, "cpu", None, rule="sol-execbench", seed=DTYPE_CASE["seed"])
    fresh = build_inputs(DTYPE_CASE, "cpu", None, rule="sol-execbench", seed=7)

    assert torch.equal(own["x"], same["x"])
    assert not torch.equal(own["x"], fresh["x"])


@pytest.mark.parametrize("rule", ["kernelindex", "sol-execbench"])
def test_a_large_draw_in_chunks_is_fresh_in_every_chunk_and_the_same_on_any_number_of_cpus(rule: str) -> None:
    # Drawn on every CPU at once, a chunk at a time: each chunk from a generator of its own. Chunks that repeat
    # would let a kernel compute one and copy it; values that depend on the CPUs would make the case's own seed
    # give other inputs on another host.
    rows = 2 * NORMAL_CHUNK // 1024 + 3
    case = random_case(("x", [rows, 1024], "float32"))
    drawn = build_inputs(case, "cpu", None, rule=rule)["x"].reshape(-1)
    with ThreadPoolExecutor(max_workers=1) as one_cpu, patch("harness.judge.tensors._drawers", return_value=one_cpu):
        on_one_cpu = build_inputs(case, "cpu", None, rule=rule)["x"].reshape(-1)

    assert torch.equal(drawn, on_one_cpu)
    first, second, last = (drawn[i * NORMAL_CHUNK : (i + 1) * NORMAL_CHUNK] for i in (0, 1, 2))
    assert not torch.equal(first[:1000], second[:1000]) and not torch.equal(first[:1000], last[:1000])
    assert float(drawn.std()) == pytest.approx(1.0, abs=0.01) and abs(float(drawn.mean())) < 0.01
    assert not torch.equal(drawn, build_inputs(case, "cpu", None, rule=rule, seed=7)["x"].reshape(-1))


@pytest.mark.parametrize("rule", ["sol-execbench", "flashinfer-bench"])
def test_a_sampling_problems_probs_are_a_softmax(rule: str) -> None:
    case = random_case(("probs", [4, 100], "float32"), ("logits", [4, 100], "float32"), op_type="sampling")
    inputs = build_inputs(case, "cpu", None, rule=rule)

    assert torch.allclose(inputs["probs"].sum(dim=-1), torch.ones(4))
    assert float(inputs["logits"].min()) < 0


def test_the_job_carries_what_the_name_rules_read() -> None:
    case = smallest_case(PROBLEMS / "66")

    assert case["inputs"]["p_attn"]["description"].startswith("Softmax output")
    assert "op_type" in case
    # No ratio in the workload: the protocol's default decides (SOL-ExecBench's is 0.99).
    assert case["tolerance"]["match_ratio"] is None


def test_normalisation_weights_are_ones_biases_zeros_and_weight_matrices_scaled_by_fan_in() -> None:
    inputs = sol_inputs("129")

    assert torch.equal(inputs["layernorm_weight"], torch.ones(96))
    assert torch.equal(inputs["layernorm_bias"], torch.zeros(96))
    pointwise = inputs["pwconv1_weight"]
    assert list(pointwise.shape) == [384, 96]
    assert float(pointwise.std()) == pytest.approx(1 / math.sqrt(96), rel=0.05)
    depthwise = inputs["dwconv_weight"]
    assert list(depthwise.shape) == [96, 1, 7, 7]
    assert float(depthwise.std()) == pytest.approx(1 / math.sqrt(7), rel=0.05)
    # An input no rule names is randn.
    assert float(inputs["x"].std()) == pytest.approx(1.0, rel=0.05)


def test_the_kernelindex_rule_draws_the_same_definition_without_name_rules() -> None:
    inputs = build_inputs(smallest_case(PROBLEMS / "129"), "cpu", None)

    assert float(inputs["layernorm_weight"].std()) == pytest.approx(1.0, rel=0.3)


def test_the_kernelindex_rule_draws_a_variance_positive_as_its_name_requires() -> None:
    # SOL-ExecBench's 001_fused_vision_multihead_attention_with_norms_backward takes sqrt(x_var + eps): on a
    # randn x_var its reference yielded NaN, and it was judged INVALID_REFERENCE against itself.
    case = random_case(("x_var", [64, 1], "float32"), ("rstd", [64], "float32"), ("x", [64, 8], "float32"))
    inputs = build_inputs(case, "cpu", None)

    assert float(inputs["x_var"].min()) >= 0.1 and float(inputs["rstd"].min()) >= 0.1
    assert float(inputs["x"].min()) < 0


def test_the_kernelindex_rule_draws_a_decay_negative_where_the_definition_says_it_is_one() -> None:
    # SOL-ExecBench's 043_mamba_chunk_scan_with_segsum exponentiates segment sums of A, "negative log decay":
    # on a randn A its reference overflowed to NaN on its first case, and was judged INVALID_REFERENCE.
    decay = build_inputs(smallest_case(PROBLEMS / "137"), "cpu", None)["A"].float()
    # SOL-ExecBench draws any input named A as a decay, a GEMM's matrix too; kernelindex leaves that one randn.
    matrix = build_inputs(smallest_case(SAMPLE_DATA / "sol-execbench" / "problems" / "213"), "cpu", None)["A"].float()

    assert float(decay.max()) <= -0.001 and float(decay.min()) >= -1.0
    assert float(matrix.min()) < 0 < float(matrix.max())


def test_rope_tables_are_cos_and_sin_of_clamped_randn() -> None:
    inputs = sol_inputs("71")
    cos, sin = inputs["cos"].float(), inputs["sin"].float()

    assert cos.dtype == sin.dtype == torch.float32 and inputs["cos"].dtype == torch.bfloat16
    assert float(cos.min()) >= -1 and float(cos.max()) <= 1 and float(sin.abs().max()) <= 1
    # E[cos N(0, 1)] = exp(-1/2) ≈ 0.61; E[sin N(0, 1)] = 0.
    assert float(cos.mean()) == pytest.approx(math.exp(-0.5), abs=0.15)
    assert float(sin.mean()) == pytest.approx(0.0, abs=0.15)


def test_a_square_attention_mask_is_causal() -> None:
    mask = sol_inputs("207")["attention_mask"]
    size = mask.shape[-1]
    above = torch.ones(size, size).triu(diagonal=1).bool()

    assert list(mask.shape[-2:]) == [size, size] and mask.dtype == torch.bfloat16
    assert bool((mask[..., above] == torch.finfo(torch.bfloat16).min).all())
    assert bool((mask[..., ~above] == 0).all())


def test_a_named_mask_is_binary() -> None:
    mask = sol_inputs("151")["x_mask"]

    assert set(mask.unique().tolist()) == {0.0, 1.0}


@pytest.mark.parametrize(("problem", "name"), [("83", "attention_weights"), ("66", "p_attn")])
def test_softmax_outputs_sum_to_one_by_name_or_by_description(problem: str, name: str) -> None:
    weights = sol_inputs(problem)[name].float()

    assert float(weights.min()) >= 0
    assert torch.allclose(weights.sum(dim=-1), torch.ones(weights.shape[:-1]), atol=2e-2)


def test_standard_deviations_are_at_least_a_tenth() -> None:
    rstd = sol_inputs("13")["rstd"]

    assert float(rstd.min()) >= 0.1


def test_a_state_space_decay_is_negative() -> None:
    decay = sol_inputs("213")["A"].float()

    assert float(decay.max()) <= -0.001 and float(decay.min()) >= -1.0

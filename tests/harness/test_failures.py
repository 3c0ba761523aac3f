"""Solutions and references that cannot run: each failure has its status and a reason a person can act on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.harness.conftest import (
    ADD_DEFINITION,
    CORRECT_ADD,
    Problem,
    assert_next_evaluation_works,
    run_harness,
    write_problem,
    write_solution,
)


def test_a_syntax_error_is_a_compile_error_naming_the_line(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", "def run(x, y, out)\n    out.copy_(x + y)\n")
    result = run_harness(add_problem, solution)

    assert result.status == "COMPILE_ERROR"
    assert result.reason is not None
    assert "SyntaxError" in result.reason and "main.py" in result.reason and "line 1" in result.reason
    assert {case.status for case in result.cases} == {"COMPILE_ERROR"}
    assert all(case.latency is None for case in result.cases)


def test_a_missing_entry_function_is_a_compile_error(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", "def kernel(x, y, out):\n    pass\n")
    result = run_harness(add_problem, solution)

    assert result.status == "COMPILE_ERROR"
    assert result.reason == "main.py defines no function 'run'"


def test_an_exception_is_a_runtime_error_with_its_last_lines(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y, out):
            raise ValueError(f"tile size does not divide {x.shape[0]}")
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "RUNTIME_ERROR"
    assert [case.status for case in result.cases] == ["RUNTIME_ERROR", "RUNTIME_ERROR"]
    reason = result.cases[0].reason or ""
    assert "ValueError: tile size does not divide 3" in reason
    assert 'main.py", line 3, in run' in reason
    assert result.reason == f"case case-small: {reason}"


def test_a_solution_helper_module_is_importable(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        from helpers import add_into

        def run(x, y, out):
            add_into(x, y, out)
        """,
        extra_sources={"helpers.py": "def add_into(x, y, out):\n    out.copy_(x + y)\n"},
    )

    assert run_harness(add_problem, solution).status == "PASSED"


def test_a_reference_that_raises_is_an_invalid_reference(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem", reference="def run(x, y):\n    raise RuntimeError('broken')\n")
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "INVALID_REFERENCE"
    assert "the reference failed" in (result.cases[0].reason or "")
    assert "RuntimeError: broken" in (result.cases[0].reason or "")
    # The evaluation's fault, not the kernel's: it recurs with the reference itself as the solution.
    assert "it recurs with the reference as the solution" in (result.reason or "")


def test_a_reference_failing_on_one_case_leaves_the_next_case_judged(tmp_path: Path) -> None:
    # On the CPU the judge runs the reference while the kernel's process computes the same round: the reference's
    # failure must wait for that call's reply, or the next case would read it as the reply to its own call.
    reference = "def run(x, y):\n    if x.shape[0] == 3:\n        raise RuntimeError('broken')\n    return x + y\n"
    problem = write_problem(tmp_path / "problem", reference=reference)
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert [case.status for case in result.cases] == ["INVALID_REFERENCE", "PASSED"], result.reason
    assert "RuntimeError: broken" in (result.cases[0].reason or "")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a host with CUDA runs this reference")
def test_a_reference_that_asks_for_cuda_on_a_host_without_it_names_what_is_missing(tmp_path: Path) -> None:
    # As some of SOL-ExecBench's published references do (torch.arange(..., device='cuda')): neither the
    # reference nor the kernel is wrong, this host cannot run the definition, and the status says so.
    reference = "import torch\n\ndef run(x, y):\n    return x + y + torch.zeros(1, device='cuda').cpu()\n"
    problem = write_problem(tmp_path / "problem", reference=reference)
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "HARNESS_ERROR", result.reason
    assert "the reference needs a CUDA device, which this host has not" in (result.cases[0].reason or "")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a host with CUDA runs this reference")
def test_a_reference_computing_with_packed_four_bit_floats_on_the_cpu_names_the_missing_device(
    tmp_path: Path,
) -> None:
    # SOL-ExecBench's nvfp4 problems (problems/203): torch has no CPU kernel for their arithmetic, so their
    # references fail on the CPU; the definition is not wrong, this host cannot run it.
    definition = {
        **ADD_DEFINITION,
        "name": "fp4_widen",
        "axes": {"n": {"type": "var"}, "width": {"type": "const", "value": 8}},
        "inputs": {"x": {"shape": ["n", "width"], "dtype": "float4_e2m1fn_x2"}},
        "outputs": {"wide": {"shape": ["n", "width"], "dtype": "float32"}},
    }
    cases = [{"uuid": "fp4", "axes": {"n": 4}, "inputs": {"x": {"type": "random"}}}]
    problem = write_problem(tmp_path / "problem", definition, cases, reference="def run(x):\n    return x.float()\n")
    solution = write_solution(tmp_path / "s", "def run(x, out):\n    out.copy_(x.float())\n", definition="fp4_widen")

    result = run_harness(problem, solution)

    assert result.status == "HARNESS_ERROR", result.reason
    reason = result.cases[0].reason or ""
    assert "the reference, computing with x (float4_e2m1fn_x2) on the CPU, needs a CUDA device" in reason, reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="a host with CUDA runs this reference")
def test_a_reference_that_quantizes_to_packed_four_bit_floats_itself_names_the_missing_device(tmp_path: Path) -> None:
    # SOL-ExecBench's 031_nvfp4_grouped_query_attention_with_kv_repeat (problems/207): bf16 inputs, quantized to
    # packed four-bit floats inside the reference, whose torch._scaled_mm exists only on CUDA. It ended
    # INVALID_REFERENCE, as if the published definition were broken.
    reference = """
    import torch

    def run(x, y):
        packed = torch.zeros(x.shape[0], 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        return x + y + packed.float().sum()
    """
    problem = write_problem(tmp_path / "problem", reference=reference)
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "HARNESS_ERROR", result.reason
    reason = result.cases[0].reason or ""
    assert "the reference, computing with float4_e2m1fn_x2 on the CPU, needs a CUDA device" in reason, reason


def test_a_reference_that_does_not_load_is_an_invalid_reference(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem", reference="import torch\n\ndef forward(x, y):\n    return x + y\n")
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "INVALID_REFERENCE"
    assert result.reason is not None and "has no attribute 'run'" in result.reason


def test_a_reference_of_the_wrong_shape_is_an_invalid_reference(tmp_path: Path) -> None:
    problem = write_problem(tmp_path / "problem", reference="def run(x, y):\n    return (x + y).sum(0)\n")
    result = run_harness(problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "INVALID_REFERENCE"
    assert result.cases[0].reason == ("output 'out': the reference returned [4] torch.float32, declared [3, 4] float32")


def test_writing_into_an_input_is_a_reward_hack(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y, out):
            x.add_(y)
            out.copy_(x)
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "REWARD_HACK"
    assert (result.cases[0].reason or "").endswith(
        "the solution wrote into its inputs: input 'x' was written to (first changed element at index (0, 0))"
    )
    assert (result.cases[0].reason or "").startswith("round 1 of 3 (")
    assert_next_evaluation_works(add_problem, tmp_path)


def test_writing_into_an_input_only_while_timed_is_a_reward_hack(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        calls = 0

        def run(x, y, out):
            global calls
            calls += 1
            out.copy_(x + y)
            if calls > 3:  # after the correctness rounds
                y.zero_()
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "REWARD_HACK"
    assert "while being timed" in (result.cases[0].reason or "")


# A definition whose reference updates a cache in place and returns it, as SOL-ExecBench's
# 018_fused_rope_with_qk_norm_and_kv_cache_update does (key_cache[:, :, cache_position] = key_rotated).
CACHE_UPDATE = {
    "name": "cache_update",
    "axes": {"n": {"type": "var"}, "slots": {"type": "const", "value": 32}, "width": {"type": "const", "value": 4}},
    "inputs": {
        "x": {"shape": ["n", "width"], "dtype": "float32"},
        "cache": {"shape": ["slots", "width"], "dtype": "float32"},
    },
    "outputs": {
        "doubled": {"shape": ["n", "width"], "dtype": "float32"},
        "cache_out": {"shape": ["slots", "width"], "dtype": "float32"},
    },
}
CACHE_UPDATE_REFERENCE = """
def run(x, cache):
    cache[: x.shape[0]] = x
    return x * 2, cache
"""


def cache_update_problem(folder: Path, slots: int = 32, reference: str = CACHE_UPDATE_REFERENCE) -> Problem:
    definition = {**CACHE_UPDATE, "axes": {**CACHE_UPDATE["axes"], "slots": {"type": "const", "value": slots}}}
    cases = [
        {"uuid": f"n{n}", "axes": {"n": n}, "inputs": {"x": {"type": "random"}, "cache": {"type": "random"}}}
        for n in (3, 16)
    ]
    return write_problem(folder, definition, cases, reference=reference)


def test_an_input_the_reference_itself_updates_in_place_may_be_written_by_the_solution(tmp_path: Path) -> None:
    problem = cache_update_problem(tmp_path / "problem")
    solution = write_solution(
        tmp_path / "s", CACHE_UPDATE_REFERENCE, definition="cache_update", dps=False, language="pytorch"
    )

    result = run_harness(problem, solution, protocol="sol-execbench")

    assert result.status == "PASSED", result.reason
    assert [case.status for case in result.cases] == ["PASSED", "PASSED"]


def test_a_buffer_updated_in_place_and_returned_whole_is_not_timed_copying_it(tmp_path: Path) -> None:
    # Each side updates a few rows of a 64 MiB cache and returns the cache whole; the reference also reads all of
    # it (a few milliseconds). Copying the returned cache where the judge reads outputs cost each call about 8 ms
    # more, and pulled every speedup on such a definition towards 1 (here to about 1.5, for a kernel that does a
    # hundredth of the reference's work). The judge reads such an output where the argument lies.
    reference = """
    def run(x, cache):
        cache[: x.shape[0]] = x
        spent = cache.sum()
        return x * 2 + spent * 0, cache
    """
    problem = cache_update_problem(tmp_path / "problem", slots=1 << 22, reference=reference)
    solution = write_solution(tmp_path / "s", CACHE_UPDATE_REFERENCE, definition="cache_update", dps=False)

    result = run_harness(problem, solution)

    assert result.status == "PASSED", result.reason
    assert result.speedup is not None and result.speedup.median > 4, result.speedup


FLATTEN = {
    "name": "flatten",
    "axes": {"n": {"type": "var"}, "squared": {"type": "expr", "expression": "n * n"}},
    "inputs": {"x": {"shape": ["n", "n"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["squared"], "dtype": "float32"}},
}


def test_returning_a_large_view_is_no_lie_about_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A call that returns its 64 MiB input flattened, a view, costs nothing; copying it where the judge reads
    # outputs is all of the request's CPU time. The reported time counts that copy, as the judge's figure does;
    # before it did, the split looked like a kernel that reported a small part of its time (a REWARD_HACK; so
    # did SOL-ExecBench's 018_fused_rope_with_qk_norm_and_kv_cache_update against itself, which returns a 1 GiB
    # cache it updated, before such an output was read where it lies). On one CPU, as every rerun runs, where
    # no other CPU's time is allowed for.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cases = [{"uuid": "square", "axes": {"n": 4096}, "inputs": {"x": {"type": "random"}}}]
    problem = write_problem(
        tmp_path / "problem", FLATTEN, cases, reference="def run(x):\n    return x.flatten().clone()\n"
    )
    solution = write_solution(tmp_path / "s", "def run(x):\n    return x.flatten()\n", definition="flatten", dps=False)

    result = run_harness(problem, solution)

    assert result.status == "PASSED", result.reason


def test_writing_into_an_input_the_reference_leaves_alone_is_still_a_reward_hack(tmp_path: Path) -> None:
    problem = cache_update_problem(tmp_path / "problem")
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, cache):
            cache[: x.shape[0]] = x
            x.mul_(2)
            return x, cache
        """,
        definition="cache_update",
        dps=False,
    )

    result = run_harness(problem, solution)

    assert result.status == "REWARD_HACK"
    assert "the solution wrote into its inputs: input 'x' was written to" in (result.cases[0].reason or "")


def test_a_cuda_solution_on_a_cpu_host_is_a_clear_compile_error(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        #include <torch/extension.h>
        void run(torch::Tensor x, torch::Tensor y, torch::Tensor out) { out.copy_(x + y); }
        """,
        language="cuda",
        entry_point="kernel.cu::run",
    )
    result = run_harness(add_problem, solution)

    assert result.status == "COMPILE_ERROR"
    assert result.reason == "a cuda solution is built for a CUDA device; this evaluation runs on cpu"


def test_replacing_the_clock_is_a_reward_hack_and_does_not_change_the_timing(
    add_problem: Problem, tmp_path: Path
) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import time

        time.perf_counter_ns = lambda: 0

        def run(x, y, out):
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "REWARD_HACK"
    assert result.cases[0].reason == "the solution replaced the harness's clock: time.perf_counter_ns"


def test_a_tensor_subclass_as_output_is_a_reward_hack(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        class Agreeable(torch.Tensor):
            pass

        def run(x, y):
            return (x + y).as_subclass(Agreeable)
        """,
        dps=False,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "REWARD_HACK"
    assert result.cases[0].reason == "the solution returned Agreeable, not plain tensors"


def test_a_solution_that_writes_nothing_fails_whatever_its_outputs_memory_held(
    add_problem: Problem, tmp_path: Path
) -> None:
    solution = write_solution(tmp_path / "s", "def run(x, y, out):\n    pass\n")
    result = run_harness(add_problem, solution)

    assert result.status == "INCORRECT_NUMERICAL"
    assert "nan at index (0, 0)" in (result.cases[0].reason or "")

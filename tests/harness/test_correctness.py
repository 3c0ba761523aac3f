"""Correctness as SOL-ExecBench states it: shape, dtype, NaN/Inf, and atol + rtol·|ref| per element."""

from __future__ import annotations

from pathlib import Path

from tests.harness.conftest import ADD_CASES, CORRECT_ADD, Problem, run_harness, write_problem, write_solution


def test_a_correct_solution_passes_every_case_with_its_latency(add_problem: Problem, tmp_path: Path) -> None:
    result = run_harness(add_problem, write_solution(tmp_path / "s", CORRECT_ADD))

    assert result.status == "PASSED"
    assert result.reason is None
    assert [case.uuid for case in result.cases] == ["case-small", "case-large"]
    for case in result.cases:
        assert case.status == "PASSED"
        assert case.max_abs_error == 0.0
        # One figure per pair of requests: the 3 timed iterations make 3 pairs, and a case takes at least 6.
        assert case.pairs == 6
        assert case.latency is not None and case.latency.n == case.pairs
        assert case.reference_latency is not None and case.reference_latency.n == case.pairs
    assert result.latency is not None and result.latency.n == 12


def test_off_by_one_hundredth_is_incorrect_numerical_with_the_first_mismatch(tmp_path: Path) -> None:
    strict = [{**case, "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5}} for case in ADD_CASES]
    problem = write_problem(tmp_path / "problem", cases=strict)
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y, out):
            torch.add(x, y, out=out)
            out[1, 2] += 1e-2
        """,
    )
    result = run_harness(problem, solution)

    assert result.status == "INCORRECT_NUMERICAL"
    case = result.cases[0]
    assert case.status == "INCORRECT_NUMERICAL"
    assert case.reason is not None
    assert "output 'out'" in case.reason and "index (1, 2)" in case.reason and "1 of 12" in case.reason
    assert case.max_abs_error is not None and abs(case.max_abs_error - 1e-2) < 1e-4
    assert case.latency is None
    assert result.latency is None


def test_the_case_tolerance_decides(tmp_path: Path) -> None:
    loose = [{**case, "tolerance": {"max_atol": 0.02, "max_rtol": 0.0}} for case in ADD_CASES]
    problem = write_problem(tmp_path / "problem", cases=loose)
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y, out):
            out.copy_(x + y + 1e-2)
        """,
    )

    assert run_harness(problem, solution).status == "PASSED"


def test_without_a_tolerance_the_case_gets_one_hundredth(add_problem: Problem, tmp_path: Path) -> None:
    close = write_solution(tmp_path / "close", "def run(x, y, out):\n    out.copy_(x + y + 5e-3)\n")
    far = write_solution(tmp_path / "far", "def run(x, y, out):\n    out.copy_(x + y + 0.1)\n")

    assert run_harness(add_problem, close).status == "PASSED"
    result = run_harness(add_problem, far)
    assert result.status == "INCORRECT_NUMERICAL"
    assert "(atol=0.01, rtol=0.01)" in (result.cases[0].reason or "")


def test_a_required_match_ratio_lets_some_elements_miss(tmp_path: Path) -> None:
    cases = [{**ADD_CASES[1], "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5, "required_match_ratio": 0.99}}]
    problem = write_problem(tmp_path / "problem", cases=cases)
    one_wrong = write_solution(
        tmp_path / "one",
        """
        def run(x, y, out):
            out.copy_(x + y)
            out[0, 0] += 1.0
        """,
    )
    many_wrong = write_solution(
        tmp_path / "many",
        """
        def run(x, y, out):
            out.copy_(x + y)
            out[:8] += 1.0
        """,
    )

    assert run_harness(problem, one_wrong).status == "PASSED"
    assert run_harness(problem, many_wrong).status == "INCORRECT_NUMERICAL"


def test_a_workloads_error_cap_fails_one_wild_element_the_ratio_allows(tmp_path: Path) -> None:
    # SOL-ExecBench's max_error_cap, read from the workload line: one element off by 100 is within a 99 %
    # ratio, and beyond a cap of 1.
    ratio = {"max_atol": 1e-5, "max_rtol": 1e-5, "required_matched_ratio": 0.99}
    capped = write_problem(tmp_path / "capped", cases=[{**ADD_CASES[1], "tolerance": {**ratio, "max_error_cap": 1}}])
    uncapped = write_problem(tmp_path / "uncapped", cases=[{**ADD_CASES[1], "tolerance": ratio}])
    wild = write_solution(tmp_path / "wild", "def run(x, y, out):\n    out.copy_(x + y)\n    out[0, 0] += 100.0\n")

    result = run_harness(capped, wild)
    assert result.status == "INCORRECT_NUMERICAL"
    assert "above the case's cap of 1 (max_error_cap)" in (result.cases[0].reason or "")
    assert run_harness(uncapped, wild).status == "PASSED"


def test_nan_fails_even_where_the_ratio_would_allow_it(tmp_path: Path) -> None:
    cases = [{**ADD_CASES[1], "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5, "required_match_ratio": 0.5}}]
    problem = write_problem(tmp_path / "problem", cases=cases)
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y, out):
            out.copy_(x + y)
            out[2, 3] = float("nan")
        """,
    )
    result = run_harness(problem, solution)

    assert result.status == "INCORRECT_NUMERICAL"
    assert result.cases[0].reason is not None
    assert "nan at index (2, 3)" in result.cases[0].reason


def test_negative_infinity_passes_only_where_allowed_and_expected(tmp_path: Path) -> None:
    reference = """
    import torch

    def run(x, y):
        out = x + y
        out[0, 0] = float("-inf")
        return out
    """
    allowed = [{**ADD_CASES[0], "tolerance": {"allow_negative_inf": True}}]
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y, out):
            out.copy_(x + y)
            out[0, 0] = float("-inf")
        """,
    )

    result = run_harness(write_problem(tmp_path / "allowed", cases=allowed, reference=reference), solution)
    assert result.status == "PASSED", result.reason
    refused = run_harness(write_problem(tmp_path / "refused", cases=ADD_CASES[:1], reference=reference), solution)
    assert refused.status == "INVALID_REFERENCE"
    assert refused.reason is not None and "NaN or Inf" in refused.reason


def test_a_wrong_shape_is_incorrect_shape(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        def run(x, y):
            return (x + y)[:, :3]
        """,
        dps=False,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "INCORRECT_SHAPE"
    assert (result.cases[0].reason or "").endswith("output 'out': shape [3, 3], expected [3, 4]")


def test_a_wrong_dtype_is_incorrect_dtype(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y):
            return (x + y).to(torch.float64)
        """,
        dps=False,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "INCORRECT_DTYPE"
    assert (result.cases[0].reason or "").endswith("output 'out': dtype torch.float64, expected torch.float32")


def test_too_few_outputs_is_incorrect_shape(tmp_path: Path) -> None:
    definition = {
        "name": "add_rows",
        "axes": {"n": {"type": "var"}, "width": {"type": "const", "value": 4}},
        "inputs": {
            "x": {"shape": ["n", "width"], "dtype": "float32"},
            "y": {"shape": ["n", "width"], "dtype": "float32"},
        },
        "outputs": {
            "total": {"shape": ["n", "width"], "dtype": "float32"},
            "difference": {"shape": ["n", "width"], "dtype": "float32"},
        },
    }
    reference = """
    def run(x, y):
        return x + y, x - y
    """
    problem = write_problem(tmp_path / "problem", definition=definition, reference=reference)
    solution = write_solution(tmp_path / "s", "def run(x, y):\n    return x + y\n", dps=False)
    result = run_harness(problem, solution)

    assert result.status == "INCORRECT_SHAPE"
    assert (result.cases[0].reason or "").endswith("the solution returned 1 outputs, expected 2")


def test_what_a_solution_does_to_its_arguments_in_place_stays_with_that_call(
    add_problem: Problem, tmp_path: Path
) -> None:
    # The kernel's process hands out the same views of the exchange again while their layout is unchanged
    # (harness.kernel.process `_view`): one whose shape or storage a call changed is made anew for the next.
    solution = write_solution(
        tmp_path / "s",
        """
        import torch

        def run(x, y):
            result = x + y
            x.unsqueeze_(0)
            y.data = torch.zeros_like(y)
            return result
        """,
        dps=False,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "PASSED", result.reason
    assert [case.status for case in result.cases] == ["PASSED", "PASSED"]

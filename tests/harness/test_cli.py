"""`python -m harness run`: one JSON result and exit 0 whenever there is a result; 2 with a clear message otherwise."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from harness import HARNESS_NAME, HARNESS_VERSION, harness_digest
from harness.parent.environment import detect_hardware_class
from tests.harness.conftest import CORRECT_ADD, Problem, write_solution

REPO = Path(__file__).resolve().parents[2]


def harness_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "run", *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_run_prints_one_json_result(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", CORRECT_ADD)
    completed = harness_cli(
        "--definition", str(add_problem.folder), "--workload", str(add_problem.workload),
        "--solution", str(solution), "--device", "cpu", "--timeout", "120", "--warmup", "1", "--iterations", "5",
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["status"] == "PASSED"
    assert set(result) >= {"status", "reason", "cases", "latency", "reference_latency", "environment", "harness"}
    assert set(result["cases"][0]) == {
        "uuid", "status", "reason", "max_abs_error", "max_rel_error", "latency", "reference_latency",
        "speedup", "pairs", "calls_per_request", "host_busy",
    }  # fmt: skip
    assert set(result["cases"][0]["latency"]) == {
        "median_ns",
        "mean_ns",
        "min_ns",
        "max_ns",
        "stdev_ns",
        "ci95_ns",
        "n",
    }
    assert result["harness"] == {"name": HARNESS_NAME, "version": HARNESS_VERSION, "digest": harness_digest()}
    assert result["protocol"]["iterations"] == 5
    environment = result["environment"]
    # This host's class: its CPU model's (or what KERNELINDEX_HARDWARE_CLASS says), as a worker here names it.
    assert environment["hardware_class"] == environment["hardware"]["class"] == detect_hardware_class()
    assert environment["libraries"]["torch"].startswith("2.13.0")
    assert environment["python"] and environment["cpu"]


def test_a_failed_evaluation_is_still_a_result_written_where_asked(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", "def run(x, y, out):\n    out.copy_(x - y)\n")
    out = tmp_path / "result.json"
    completed = harness_cli(
        "--definition", str(add_problem.definition), "--workload", str(add_problem.workload),
        "--solution", str(solution), "--iterations", "1", "--json", str(out),
    )  # fmt: skip

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""
    assert json.loads(out.read_text())["status"] == "INCORRECT_NUMERICAL"


def test_an_unreadable_file_is_refused_naming_it(add_problem: Problem, tmp_path: Path) -> None:
    completed = harness_cli(
        "--definition", str(add_problem.folder), "--workload", str(tmp_path / "absent.jsonl"),
        "--solution", str(write_solution(tmp_path / "s", CORRECT_ADD)),
    )  # fmt: skip

    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.startswith(f"harness: error: {tmp_path / 'absent.jsonl'}: cannot read:")


def test_a_bad_field_is_refused_naming_file_and_field(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", CORRECT_ADD, entry_point="main.py")
    completed = harness_cli(
        "--definition", str(add_problem.folder), "--workload", str(add_problem.workload), "--solution", str(solution)
    )

    assert completed.returncode == 2
    assert completed.stderr.startswith(f"harness: error: {solution}, field spec.entry_point: String should match")


def test_a_solution_for_another_definition_is_refused(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(tmp_path / "s", CORRECT_ADD, definition="gemm")
    completed = harness_cli(
        "--definition", str(add_problem.folder), "--workload", str(add_problem.workload), "--solution", str(solution)
    )

    assert completed.returncode == 2
    assert "field definition: the solution is for 'gemm', not 'add_rows'" in completed.stderr


def test_an_unknown_device_is_refused(add_problem: Problem, tmp_path: Path) -> None:
    completed = harness_cli(
        "--definition", str(add_problem.folder), "--workload", str(add_problem.workload),
        "--solution", str(write_solution(tmp_path / "s", CORRECT_ADD)), "--device", "tpu",
    )  # fmt: skip

    assert completed.returncode == 2
    assert completed.stderr == "harness: error: --device: expected cpu, cuda or cuda:N, not 'tpu'\n"


def test_the_digest_covers_the_harness_code() -> None:
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", harness_digest())
    assert harness_digest() == harness_digest()

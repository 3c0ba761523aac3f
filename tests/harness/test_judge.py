"""The judge's own rules: the case's own seed in a round drawn at random, fresh inputs on request, protocols."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.conftest import Problem, run_harness, write_solution

# Wrong only on the inputs a case's own seed gives (which anyone can compute: definition name and uuid).
WRONG_ON_THE_CASE_SEED = """
import hashlib
import torch

def run(x, y, out):
    torch.add(x, y, out=out)
    for uuid in ("case-small", "case-large"):
        seed = int.from_bytes(hashlib.sha256(f"add_rows\\n{uuid}".encode()).digest()[:8], "big") >> 1
        generator = torch.Generator().manual_seed(seed)
        first = torch.randn(x.shape, generator=generator)
        if torch.equal(first, x):
            out.zero_()
"""


@pytest.mark.hostile
def test_a_kernel_wrong_only_on_the_case_seed_fails_in_a_round_it_cannot_tell_apart(
    add_problem: Problem, tmp_path: Path
) -> None:
    solution = write_solution(tmp_path / "s", WRONG_ON_THE_CASE_SEED)

    reproducible = run_harness(add_problem, solution)
    fresh = run_harness(add_problem, solution, fresh_inputs=True)

    assert reproducible.status == "INCORRECT_NUMERICAL"
    # The reason names the round and the seed, so the failure can be reproduced; the round is drawn at random.
    reason = reproducible.cases[0].reason or ""
    assert re.match(r"round [123] of 3 \(the case's own seed, \d+\): output 'out'", reason), reason
    assert fresh.status == "PASSED", fresh.reason


def test_a_language_the_protocol_does_not_take_is_a_compile_error(add_problem: Problem, tmp_path: Path) -> None:
    # FlashInfer-Bench writes "python" where SOL-ExecBench writes "pytorch".
    solution = write_solution(tmp_path / "s", "def run(x, y, out):\n    out.copy_(x + y)\n", language="python")

    result = run_harness(add_problem, solution, protocol="sol-execbench")

    assert result.status == "COMPILE_ERROR"
    assert "the sol-execbench protocol takes no python solution" in (result.reason or "")
    assert run_harness(add_problem, solution, protocol="flashinfer-bench").status == "PASSED"

"""`python -m harness run --definition D --workload W --solution S [...]`: one JSON result.

Exit status 0 whenever an evaluation result was produced, whatever its status;
2 for unusable arguments or unreadable files, with the file and field named.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.jail.sandbox import SandboxUnavailableError
from harness.judge.protocols import DEFAULT_PROTOCOL, PROTOCOL_NAMES
from harness.parent.api import evaluate_with
from harness.parent.errors import HarnessInputError
from harness.parent.options import (
    DEFAULT_CASE_BUDGET,
    DEFAULT_MEMORY_MB,
    DEFAULT_SCRATCH_MB,
    DEFAULT_TIMEOUT,
    EvaluationOptions,
)

USAGE_ERROR = 2


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    commands = main.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="evaluate a solution on a workload")
    run.add_argument("--definition", required=True, type=Path, help="definition.json, or the folder holding it")
    run.add_argument("--workload", required=True, type=Path, help="workload.jsonl: one case a line")
    run.add_argument("--solution", required=True, type=Path, help="solution.json")
    run.add_argument("--reference", type=Path, help="reference.py, in place of the definition's own")
    run.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    run.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="wall-time limit in seconds")
    run.add_argument("--json", default="-", metavar="OUT|-", help="where to write the result (default: stdout)")
    run.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB, help="resident memory limit")
    run.add_argument("--warmup", type=int, default=10, help="warm-up iterations per case")
    run.add_argument("--iterations", type=int, default=50, help="timed iterations per case")
    run.add_argument("--data-root", type=Path, help="where relative safetensors paths start")
    run.add_argument(
        "--protocol",
        choices=PROTOCOL_NAMES,
        default=DEFAULT_PROTOCOL,
        help="judge as this source's own evaluator does (default: kernelindex, for native runs)",
    )
    run.add_argument(
        "--fresh-inputs",
        action="store_true",
        help="every round on inputs from a new random seed, none from the case's own",
    )
    run.add_argument(
        "--precision",
        type=float,
        help="add timed pairs until each case's speedup interval is within this fraction of its median (0.05)",
    )
    run.add_argument(
        "--case-budget",
        type=float,
        default=DEFAULT_CASE_BUDGET,
        help=f"seconds of timed pairs per case at most, with --precision (default {DEFAULT_CASE_BUDGET:g})",
    )
    run.add_argument("--scratch-mb", type=int, default=DEFAULT_SCRATCH_MB, help="size of the solution's scratch space")
    run.add_argument("--unsandboxed", action="store_true", help="development only: run without bubblewrap")
    return main


def main(argv: list[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    try:
        options = EvaluationOptions(
            reference=arguments.reference,
            device=arguments.device,
            timeout=arguments.timeout,
            memory_mb=arguments.memory_mb,
            sandbox=not arguments.unsandboxed,
            warmup=arguments.warmup,
            iterations=arguments.iterations,
            data_root=arguments.data_root,
            protocol=arguments.protocol,
            scratch_mb=arguments.scratch_mb,
            fresh_inputs=arguments.fresh_inputs,
            precision=arguments.precision,
            case_budget=arguments.case_budget,
        )
        result = evaluate_with(arguments.definition, arguments.workload, arguments.solution, options)
    except (HarnessInputError, SandboxUnavailableError) as error:
        print(f"harness: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    text = result.model_dump_json(indent=2)
    if arguments.json == "-":
        print(text)
    else:
        try:
            Path(arguments.json).write_text(text + "\n", encoding="utf-8")
        except OSError as error:
            print(f"harness: error: --json {arguments.json}: {error}", file=sys.stderr)
            return USAGE_ERROR
    return 0

"""Every published definition's reference, submitted as its own solution, under each protocol it is valid for.

    .venv/bin/python bench/sol_examples/references.py --references PATH [--data DIR] [--cases N]
        [--protocol NAME]... [--only ID,...] [--timeout S] [--log FILE]

DIR is the data pack (default ../shared/data): its sol-execbench/problems/<id>/
folders hold the published definitions with the `reference` field removed.
PATH holds the same problems with their references (problems/<id>/definition.json):
a checkout or a bare git directory of bras6379/sol-execbench-solver, the pack's
origin, or any folder laid out so. For each problem, the definition is taken
from the pack, checked to be the origin's but for `reference`, given the
origin's reference, and evaluated with `python -m harness run` against its N
cheapest published cases (smallest product of `var` axes; cases whose inputs
are safetensors blobs, which neither holds, are skipped) with the reference
as a destination-returning solution in the protocol's language. Nothing of
PATH is written into this repository; each run works in a temporary folder.

Prints a markdown table: problem, definition, protocol, status, reason, seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.protocols import PROTOCOL_NAMES  # noqa: E402

# The language each source's evaluator takes for a PyTorch solution.
LANGUAGES = {"sol-execbench": "pytorch", "flashinfer-bench": "python", "kernelindex": "python"}


def origin_definition(references: Path, problem: str) -> dict[str, Any]:
    relative = f"problems/{problem}/definition.json"
    if (references / relative).is_file():
        return json.loads((references / relative).read_text())
    shown = subprocess.run(
        ["git", "--git-dir", str(references), "show", f"HEAD:{relative}"], check=True, capture_output=True, text=True
    )
    return json.loads(shown.stdout)


def cheapest_cases(workload: Path, count: int) -> list[str]:
    """The `count` published cases with the smallest product of var axes, none with a safetensors input."""
    lines = [line for line in workload.read_text().splitlines() if line.strip()]
    usable = [line for line in lines if '"safetensors"' not in line]
    usable.sort(key=lambda line: math.prod(int(v) for v in json.loads(line)["axes"].values() if isinstance(v, int)))
    return usable[:count]


def write_problem(data: Path, references: Path, problem: str, folder: Path, cases: int) -> tuple[str, int]:
    """(definition name, number of cases written) into folder."""
    published = data / "sol-execbench" / "problems" / problem
    definition = json.loads((published / "definition.json").read_text())
    origin = origin_definition(references, problem)
    reference = origin.pop("reference")
    if origin != definition:
        raise SystemExit(f"problem {problem}: the origin's definition is not the pack's but for its reference")
    definition["reference"] = reference
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps(definition, indent=2))
    chosen = cheapest_cases(published / "workload.jsonl", cases)
    (folder / "workload.jsonl").write_text("".join(line + "\n" for line in chosen))
    return definition["name"], len(chosen)


def write_solution(folder: Path, definition: dict[str, Any], protocol: str) -> Path:
    document = {
        "name": f"{definition['name']}-reference",
        "definition": definition["name"],
        "author": "the definition's reference",
        "spec": {
            "language": LANGUAGES[protocol],
            "target_hardware": ["cpu"],
            "entry_point": "reference.py::run",
            "destination_passing_style": False,
            "dependencies": [],
        },
        "sources": [{"path": "reference.py", "content": definition["reference"]}],
    }
    path = folder / f"solution-{protocol}.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def run_one(folder: Path, protocol: str, arguments: argparse.Namespace) -> tuple[str, str]:
    definition = json.loads((folder / "definition.json").read_text())
    solution = write_solution(folder, definition, protocol)
    command = [sys.executable, "-m", "harness", "run", "--protocol", protocol, "--device", "cpu"]
    command += ["--definition", str(folder / "definition.json"), "--workload", str(folder / "workload.jsonl")]
    command += ["--solution", str(solution), "--timeout", str(arguments.timeout)]
    command += ["--warmup", str(arguments.warmup), "--iterations", str(arguments.iterations)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=arguments.timeout * 4)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or ["(no output)"]
        return f"exit {completed.returncode}", lines[-1]
    result = json.loads(completed.stdout)
    return result["status"], " ".join((result.get("reason") or "").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--references", required=True, type=Path, help="problems/<id>/definition.json with references")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="the data pack")
    parser.add_argument("--cases", type=int, default=1, help="cheapest published cases per problem (default 1)")
    parser.add_argument("--protocol", action="append", choices=PROTOCOL_NAMES, help="default: every protocol")
    parser.add_argument("--only", help="comma-separated problem ids (default: every problem in the pack)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--log", type=Path, help="also append one JSON line per run here")
    arguments = parser.parse_args(argv)
    problems_folder = arguments.data / "sol-execbench" / "problems"
    problems = arguments.only.split(",") if arguments.only else sorted((p.name for p in problems_folder.iterdir()), key=int)
    protocols = arguments.protocol or list(PROTOCOL_NAMES)
    print("| problem | definition | protocol | cases | status | reason | seconds |\n|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="sol-references-") as temporary:
        for problem in problems:
            folder = Path(temporary) / problem
            name, count = write_problem(arguments.data, arguments.references, problem, folder, arguments.cases)
            for protocol in protocols:
                started = time.monotonic()
                status, reason = run_one(folder, protocol, arguments)
                seconds = time.monotonic() - started
                row = [problem, name, protocol, str(count), status, reason.replace("|", "/")[:300], f"{seconds:.0f}"]
                print("| " + " | ".join(row) + " |", flush=True)
                if arguments.log:
                    with arguments.log.open("a") as log:
                        entry = dict(zip(["problem", "definition", "protocol", "cases", "status", "reason"], row[:6]))
                        log.write(json.dumps(entry | {"seconds": round(seconds, 1)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

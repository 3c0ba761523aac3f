"""NVIDIA's SOL-ExecBench examples through the harness: each example's status and reason.

    .venv/bin/python bench/sol_examples/run.py --repo PATH [--device cuda] [--unsandboxed]

PATH is a clone of github.com/NVIDIA/SOL-ExecBench: a checkout or a bare git
directory. Its examples/ folder is extracted with `git archive` into a
temporary folder (nothing is written under PATH or in this repository), and
each examples/<language>/<problem>/solution_*.json is run with
`python -m harness run --protocol sol-execbench` against the definition.json,
workload.jsonl and reference.py beside it. The table shows the harness's exit
status, the evaluation's status, its reason (or the error for exit 2) and the
wall time of the harness's run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def extract_examples(repo: Path, revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", revision, "examples"], check=True, capture_output=True
    ).stdout
    archive_path = into / "examples.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(into, filter="data")
    return into / "examples"


def run_example(solution: Path, arguments: argparse.Namespace) -> tuple[int, str, str]:
    """(exit status, status, reason) of one harness run."""
    folder = solution.parent
    command = [sys.executable, "-m", "harness", "run", "--protocol", "sol-execbench"]
    command += ["--definition", str(folder / "definition.json"), "--workload", str(folder / "workload.jsonl")]
    command += ["--solution", str(solution), "--device", arguments.device, "--timeout", str(arguments.timeout)]
    command += ["--warmup", str(arguments.warmup), "--iterations", str(arguments.iterations)]
    if (folder / "reference.py").is_file():
        command += ["--reference", str(folder / "reference.py")]
    if arguments.unsandboxed:
        command.append("--unsandboxed")
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=arguments.timeout * 4)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or ["(no output)"]
        return completed.returncode, "-", lines[-1]
    result = json.loads(completed.stdout)
    return 0, result["status"], " ".join((result.get("reason") or "").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path, help="a SOL-ExecBench checkout or bare git directory")
    parser.add_argument("--revision", default="HEAD", help="the commit whose examples to run (default HEAD)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up iterations per case (default 1)")
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per case (default 3)")
    parser.add_argument(
        "--timeout", type=float, default=900, help="the harness's time limit per example (default 900 s)"
    )
    parser.add_argument("--unsandboxed", action="store_true", help="pass --unsandboxed to the harness")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sol-examples-") as temporary:
        examples = extract_examples(arguments.repo, arguments.revision, Path(temporary))
        solutions = sorted(examples.glob("*/*/solution_*.json"))
        print("| example | languages | exit | status | reason | seconds |\n|---|---|---|---|---|---|")
        for solution in solutions:
            languages = ", ".join(json.loads(solution.read_text())["spec"].get("languages") or [])
            started = time.monotonic()
            code, status, reason = run_example(solution, arguments)
            seconds = time.monotonic() - started
            name = solution.relative_to(examples).as_posix()
            row = [name, languages, str(code), status, reason.replace("|", "/"), f"{seconds:.0f}"]
            print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

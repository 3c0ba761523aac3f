"""Published definitions' references judged as their own solutions, under each protocol each is valid for.

    .venv/bin/python bench/sol_examples/references.py [--sol-repo PATH] [--fib-repo PATH] [--problems-repo PATH]
        [--only NAME ...] [--protocol NAME ...] [--smallest-case]

--sol-repo is a clone of github.com/NVIDIA/SOL-ExecBench and --fib-repo one of
github.com/flashinfer-ai/flashinfer-bench: checkouts or bare git directories.
--problems-repo is a git repository holding SOL-ExecBench's dataset in the
layout of ../shared/data/sol-execbench/problems/<id>/ (definition.json beside
workload.jsonl) with each problem's `reference`, which the shared copy has
removed: github.com/bras6379/sol-execbench-solver, the shared data's origin,
holds all 235 (for the 168 shared problems, the same definitions with the
reference put back, and the same workload files byte for byte), and includes the FlashInfer-Bench subset as
SOL-ExecBench republished it.
Their published definitions that carry a `reference` (every
examples/<language>/<problem>/definition.json of SOL-ExecBench; every
definition JSON of flashinfer-bench with a `reference`) are extracted with `git
archive` into a temporary folder (nothing is written under either path or in
this repository), each reference is written as a PyTorch solution in its
source's own solution format, and `python -m harness run --device cpu
--protocol P --warmup 1 --iterations 5 --timeout 180` judges it on the
definition's whole published workload, for each protocol P the definition is
valid for:

- a SOL-ExecBench definition: `sol-execbench` (its own evaluator) and
  `kernelindex` (a native run may take a definition of either format). Not
  `flashinfer-bench`: its Definition requires an `op_type` and knows only
  `const` and `var` axes, and its workloads only random, scalar and
  safetensors inputs (flashinfer-ai/flashinfer-bench@40e6ca7844b5
  flashinfer_bench/data/definition.py and workload.py), while SOL-ExecBench's
  examples have definitions without `op_type`, `expr` axes and custom inputs.
- a flashinfer-bench definition: `flashinfer-bench` and `kernelindex`. Not
  `sol-execbench`: its evaluator reads workloads in its own format, not
  FlashInfer-Bench's traces, and draws inputs by rules on their names
  (NVIDIA/SOL-ExecBench@8d2237d2012c src/sol_execbench/core/bench/io.py,
  _generate_heuristic_tensor) that FlashInfer-Bench's definitions were not
  written for; its FlashInfer-Bench subset republishes such definitions in
  its own format, with workloads of its own.

A reference that passes against itself is the least any judge must do; one
that does not must end with a status naming what this host lacks. The table
gives the definition, protocol, status, reason and the harness's wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOL_PROTOCOLS = ("sol-execbench", "kernelindex")
FIB_PROTOCOLS = ("flashinfer-bench", "kernelindex")


@dataclass(frozen=True)
class Published:
    """One published definition with a reference, and the workload published beside it."""

    label: str
    source: str
    definition: Path
    workload: Path
    protocols: tuple[str, ...]


def extract(repo: Path, revision: str, paths: list[str], into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", revision, *paths], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    archive_path = into / "files.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(into, filter="data")
    return into


def tracked(repo: Path, revision: str, suffix: str) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", revision], check=True, capture_output=True, text=True
    ).stdout
    return [path for path in listed.splitlines() if path.endswith(suffix)]


def sol_definitions(repo: Path, revision: str, into: Path) -> list[Published]:
    """Every SOL-ExecBench example's definition, with the workload.jsonl beside it."""
    paths = [path for path in tracked(repo, revision, "/definition.json") if path.startswith("examples/")]
    folder = extract(repo, revision, ["examples"], into)
    found = []
    for path in paths:
        definition = folder / path
        if "reference" in json.loads(definition.read_text()):
            label = definition.parent.relative_to(folder / "examples").as_posix()
            workload = definition.parent / "workload.jsonl"
            found.append(Published(label, "SOL-ExecBench", definition, workload, SOL_PROTOCOLS))
    return found


def problem_definitions(repo: Path, revision: str, into: Path) -> list[Published]:
    """Every problem of SOL-ExecBench's dataset layout (problems/<id>/definition.json beside its workload.jsonl).

    The dataset (huggingface.co/datasets/nvidia/SOL-ExecBench, as ../shared/data
    and its origin repository lay it out) carries each problem's reference, most
    with a `get_inputs` of their own (`custom_inputs_entrypoint`); a copy whose
    references were removed yields nothing here.
    """
    paths = [path for path in tracked(repo, revision, "/definition.json") if path.startswith("problems/")]
    folder = extract(repo, revision, ["problems"], into)
    found = []
    for path in sorted(paths, key=lambda path: int(path.split("/")[1]) if path.split("/")[1].isdigit() else 0):
        definition = folder / path
        document = json.loads(definition.read_text())
        if "reference" in document:
            label = f"{definition.parent.relative_to(folder).as_posix()}/{document['name']}"
            workload = definition.parent / "workload.jsonl"
            found.append(Published(label, "SOL-ExecBench", definition, workload, SOL_PROTOCOLS))
    return found


def fib_definitions(repo: Path, revision: str, into: Path) -> list[Published]:
    """Every flashinfer-bench definition JSON with a reference, with its trace set's workloads/<name>.jsonl."""
    candidates = [path for path in tracked(repo, revision, ".json") if "/definitions/" in f"/{path}"]
    # A trace set's layout: <root>/definitions/<op>/<name>.json beside <root>/workloads/<op>/<name>.jsonl.
    roots = sorted({f"/{path}".split("/definitions/")[0].lstrip("/") or "." for path in candidates})
    folder = extract(repo, revision, roots, into)
    found = []
    for path in candidates:
        definition = folder / path
        document = json.loads(definition.read_text())
        if "reference" not in document:
            continue
        root = next(parent for parent in definition.parents if parent.name == "definitions").parent
        relative = definition.relative_to(root / "definitions").with_suffix(".jsonl")
        found.append(Published(path, "flashinfer-bench", definition, root / "workloads" / relative, FIB_PROTOCOLS))
    return found


def write_reference_solution(published: Published, folder: Path) -> Path:
    """The definition's reference as a PyTorch solution, in its source's solution format."""
    document = json.loads(published.definition.read_text())
    spec: dict[str, object] = {"entry_point": "reference.py::run", "destination_passing_style": False}
    if published.source == "SOL-ExecBench":
        spec |= {"languages": ["pytorch"], "target_hardware": ["LOCAL"], "dependencies": ["torch"]}
    else:
        spec |= {"language": "python", "target_hardware": ["cpu"], "dependencies": []}
    solution = {
        "name": f"{document['name']}-reference",
        "definition": document["name"],
        "author": "bench/sol_examples/references.py",
        "spec": spec,
        "sources": [{"path": "reference.py", "content": document["reference"]}],
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "solution.json"
    path.write_text(json.dumps(solution, indent=2))
    return path


def smallest_case(published: Published) -> Published:
    """The definition with only its smallest published case, the one whose axes multiply to the least (the first
    of equals), in a workload file written beside the published one: a screen for wrong statuses across many
    definitions in minutes, where whole workloads take hours on a small host. Safetensors inputs are looked up
    from the workload's folder, so the file stays there."""
    lines = [line for line in published.workload.read_text().splitlines() if line.strip()]

    def size(line: str) -> int:
        product = 1
        for value in json.loads(line).get("axes", {}).values():
            product *= value if isinstance(value, int) and value > 0 else 1
        return product

    trimmed = published.workload.with_name(published.workload.stem + ".smallest.jsonl")
    trimmed.write_text(min(lines, key=size) + "\n")
    return replace(published, workload=trimmed)


def judge(published: Published, protocol: str, solution: Path, arguments: argparse.Namespace) -> tuple[str, str]:
    """(status, reason) of one harness run; for exit status 2, ("exit 2", its last line of stderr)."""
    if arguments.smallest_case:
        published = smallest_case(published)
    command = [sys.executable, "-m", "harness", "run", "--device", "cpu", "--protocol", protocol]
    command += ["--definition", str(published.definition), "--workload", str(published.workload)]
    command += ["--solution", str(solution), "--timeout", str(arguments.timeout)]
    command += ["--warmup", str(arguments.warmup), "--iterations", str(arguments.iterations)]
    if arguments.unsandboxed:
        command.append("--unsandboxed")
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=arguments.timeout * 4)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or ["(no output)"]
        return f"exit {completed.returncode}", lines[-1]
    result = json.loads(completed.stdout)
    return result["status"], " ".join((result.get("reason") or "").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sol-repo", type=Path, help="a SOL-ExecBench checkout or bare git directory (its examples)")
    parser.add_argument("--fib-repo", type=Path, help="a flashinfer-bench checkout or bare git dir")
    parser.add_argument("--problems-repo", type=Path, help="a git repository holding SOL-ExecBench's problems/<id>/")
    parser.add_argument("--revision", default="HEAD", help="the commit of both to read (default HEAD)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up iterations per case (default 1)")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per case (default 5)")
    parser.add_argument("--timeout", type=float, default=180, help="the harness's limit per run (default 180 s)")
    parser.add_argument("--only", nargs="*", default=[], help="run only the definitions whose label has one")
    parser.add_argument("--protocol", nargs="*", default=[], help="run only these protocols")
    parser.add_argument("--unsandboxed", action="store_true", help="pass --unsandboxed to the harness")
    parser.add_argument(
        "--smallest-case", action="store_true", help="judge each definition on its smallest case only (a screen)"
    )
    arguments = parser.parse_args(argv)
    if not (arguments.sol_repo or arguments.fib_repo or arguments.problems_repo):
        parser.error("give at least one of --sol-repo, --fib-repo and --problems-repo")
    with tempfile.TemporaryDirectory(prefix="published-references-") as temporary:
        folder = Path(temporary)
        published = []
        if arguments.sol_repo:
            published += sol_definitions(arguments.sol_repo, arguments.revision, folder / "sol")
        if arguments.fib_repo:
            published += fib_definitions(arguments.fib_repo, arguments.revision, folder / "fib")
        if arguments.problems_repo:
            published += problem_definitions(arguments.problems_repo, arguments.revision, folder / "problems")
        if arguments.only:
            published = [item for item in published if any(part in item.label for part in arguments.only)]
        print("| definition | source | protocol | status | reason | seconds |\n|---|---|---|---|---|---|")
        for number, item in enumerate(published):
            for protocol in item.protocols:
                if arguments.protocol and protocol not in arguments.protocol:
                    continue
                solution = write_reference_solution(item, folder / "solutions" / f"{number}-{protocol}")
                started = time.monotonic()
                status, reason = judge(item, protocol, solution, arguments)
                seconds = time.monotonic() - started
                row = [item.label, item.source, protocol, status, reason.replace("|", "/"), f"{seconds:.0f}"]
                print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

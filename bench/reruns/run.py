"""The reruns benchmark: N queued CPU reruns of a tiny kernel, run by two rerun workers.

    python bench/reruns/run.py [--reruns 100] [--workers 2]

It creates a PostgreSQL database of its own (dropped first), migrates it, imports
N reported runs of one tiny kernel (an elementwise add of 64 floats), starts the
web tier's worker (`celery -A kernelindex worker`: the collector) and the rerun
workers (`python -m harness.worker`, one process each, each with a key of its
own and no database) on a Redis database of its own, queues the N reruns at
once and waits for every one. It prints:
- reruns per minute, from the first request to the last result stored;
- per rerun, where the time went: waiting in the queue (requested -> claimed),
  the harness's own run (its process, sandbox, torch import, inputs, timing),
  and the orchestration (claimed -> result stored, minus the harness's time:
  writing the files, signing, the results queue, the collector's checks, the
  result run, the evidence, the log);
- the dispatch latency of one rerun queued while the workers are idle
  (requested -> claimed), the part of orchestration a queue does not hide.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
SERVER = "postgres://postgres@127.0.0.1:5432"
DATABASE = "kernelindex_bench_reruns"
BROKER = "redis://127.0.0.1:6379/9"

DEFINITION = {
    "name": "bench_add_64",
    "description": "z = x + y over 64 floats: a kernel that costs nothing, so the rest shows.",
    "op_type": "elementwise",
    "axes": {"n": {"type": "const", "value": 64}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"z": {"shape": ["n"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(x, y):\n    return x + y\n",
}
CASE = {"uuid": "bench-add-64", "axes": {}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}}}
SOLUTION = {
    "name": "bench-add-64-torch",
    "definition": "bench_add_64",
    "author": "bench",
    "spec": {"language": "python", "entry_point": "add.py::run", "destination_passing_style": True},
    "sources": [{"path": "add.py", "content": "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"}],
}


def create_database() -> None:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))


def write_runs(folder: Path, count: int) -> Path:
    """The definition folder, the solution, and `count` reported runs of it as native manifests."""
    sys.path.insert(0, str(ROOT))
    from records.canonical import digest
    from records.schema import REFERENCE_FIELDS, make_document
    from records.sources.runnable import read_definition_folder, read_solution

    (folder / "definition").mkdir()
    (folder / "definition" / "definition.json").write_text(json.dumps(DEFINITION))
    (folder / "definition" / "workload.jsonl").write_text(json.dumps(CASE) + "\n")
    (folder / "solution.json").write_text(json.dumps(SOLUTION))
    documents = {
        "protocol": make_document(
            "BenchmarkProtocol",
            "bench-reported",
            {
                "harness": {"name": "bench", "version": "1"},
                "measurement": {"timer": "perf_counter_ns", "primaryStatistic": "median"},
                "correctness": {"reference": "definition reference", "comparator": "allclose"},
                "comparability": {"family": "bench"},
            },
        ),
        "environment": make_document(
            "ExecutionEnvironment", "bench-cpu", {"hardware": {"vendor": "any", "product": "CPU", "class": "cpu"}}
        ),
        "workload": read_definition_folder(folder / "definition")[0].value,
        "implementation": read_solution(folder / "solution.json").value,
    }
    references = {REFERENCE_FIELDS[role]: digest(document) for role, document in documents.items()}
    lines = []
    for index in range(count):
        spec = {
            "status": "passed",
            "timing": {"latencyNs": {"median": 5000}, "primaryStatistic": "median"},
            "sourceNative": {"source": "kernelindex", "externalId": f"bench/{index}"},
            **references,
        }
        lines.append(json.dumps({"run": make_document("BenchmarkRun", f"bench-{index}", spec), **documents}))
    (folder / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def environment(var_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"{SERVER}/{DATABASE}",
        "CELERY_BROKER_URL": BROKER,
        "KERNELINDEX_VAR_DIR": str(var_dir),
        "KERNELINDEX_HARDWARE_CLASS": "cpu",
        "DJANGO_SETTINGS_MODULE": "kernelindex.settings",
        "RERUN_RESEND_AFTER_SECONDS": "3600",  # a long queue is not a lost message
    }


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def start_workers(env: dict[str, str], count: int, folder: Path) -> list[subprocess.Popen[bytes]]:
    """The web tier's worker (the collector), and `count` rerun workers with a registered key each."""
    web = [sys.executable, "-m", "celery", "-A", "kernelindex", "worker", "--concurrency", "1"]
    web += ["--hostname", "bench-web@%h", "--loglevel", "warning", "--without-heartbeat"]
    log = (folder / "web-worker.log").open("wb")
    workers = [subprocess.Popen(web, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)]
    for index in range(count):
        created = [sys.executable, "manage.py", "worker_key", "create", f"bench-{index}", "--class", "cpu"]
        key = folder / f"worker-{index}.key"
        key.write_text(subprocess.run(created, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
        rerun_env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
        rerun_env |= {"KERNELINDEX_BROKER_URL": BROKER, "KERNELINDEX_WORKER_KEY_FILE": str(key)}
        command = [sys.executable, "-m", "harness.worker", "--hostname", f"bench-{index}@%h", "--loglevel", "warning"]
        log = (folder / f"worker-{index}.log").open("wb")
        workers.append(subprocess.Popen(command, cwd=ROOT, env=rerun_env, stdout=log, stderr=subprocess.STDOUT))
    time.sleep(8)  # the workers' start (Django, Celery) before anything is queued
    return workers


def queue_and_wait(run_ids: list[str], timeout: float) -> list[Any]:
    from runs.models import Run
    from verification.models import RerunRequest
    from verification.reruns import request_rerun

    requests = [request_rerun(Run.objects.get(run_id=run_id), user=None) for run_id in run_ids]
    pending = {request.pk for request in requests}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        done = RerunRequest.objects.filter(pk__in=pending).exclude(state__in=RerunRequest.ACTIVE_STATES)
        pending -= set(done.values_list("pk", flat=True))
        time.sleep(0.25)
    if pending:
        raise SystemExit(f"{len(pending)} reruns did not finish in {timeout:.0f} s")
    return list(RerunRequest.objects.filter(pk__in=[r.pk for r in requests]).order_by("pk"))


def report(requests: list[Any], idle: Any, workers: int) -> None:
    states: dict[str, int] = {}
    for request in requests:
        states[request.state] = states.get(request.state, 0) + 1
    first = min(r.requested_at for r in requests)
    last = max(r.finished_at for r in requests)
    wall = (last - first).total_seconds()
    waiting = [(r.started_at - r.requested_at).total_seconds() * 1000 for r in requests]
    harness = [r.harness_seconds * 1000 for r in requests]
    overhead = [(r.finished_at - r.started_at).total_seconds() * 1000 - r.harness_seconds * 1000 for r in requests]
    print(f"{len(requests)} reruns, {workers} workers, {os.cpu_count()} cores: {states}")
    print(f"  wall time {wall:.1f} s -> {len(requests) / wall * 60:.1f} reruns/min")
    for label, values in (("queue wait", waiting), ("harness", harness), ("orchestration", overhead)):
        values = sorted(values)
        print(
            f"  {label:28} median {statistics.median(values):8.1f} ms, "
            f"p90 {values[int(len(values) * 0.9) - 1]:8.1f} ms, max {values[-1]:8.1f} ms"
        )
    dispatch = (idle.started_at - idle.requested_at).total_seconds() * 1000
    worker_side = (idle.finished_at - idle.started_at).total_seconds() * 1000 - idle.harness_seconds * 1000
    print(f"  one rerun on idle workers: dispatch (requested -> claimed) {dispatch:.1f} ms, ", end="")
    print(f"orchestration {worker_side:.1f} ms, total {dispatch + worker_side:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reruns", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    options = parser.parse_args()
    create_database()
    with tempfile.TemporaryDirectory(prefix="bench-reruns-") as scratch:
        folder = Path(scratch)
        env = environment(folder)
        os.environ.update(
            {
                key: env[key]
                for key in ("DATABASE_URL", "CELERY_BROKER_URL", "KERNELINDEX_VAR_DIR", "DJANGO_SETTINGS_MODULE")
            }
        )
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from runs.models import Run

        manage(env, "migrate", "--noinput")
        write_runs(folder, options.reruns + 1)
        manage(
            env, "import_runs", str(folder / "definition"), str(folder / "solution.json"), str(folder / "runs.jsonl")
        )
        run_ids = list(
            Run.objects.filter(external_id__startswith="bench/").order_by("id").values_list("run_id", flat=True)
        )
        workers = start_workers(env, options.workers, folder)
        try:
            (idle,) = queue_and_wait(run_ids[:1], options.timeout)
            requests = queue_and_wait(run_ids[1:], options.timeout)
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(timeout=30)
        report(requests, idle, options.workers)


if __name__ == "__main__":
    main()

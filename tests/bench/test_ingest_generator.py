"""The ingest benchmark's synthetic runs: reproducible, in the source's own format, and importable."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

from records.manifest import RunItem
from records.sources import detect
from records.sources.native import ManifestAdapter
from records.sources.sol_execbench import SubmissionsAdapter

GENERATOR = Path(__file__).resolve().parents[2] / "bench" / "ingest" / "generate.py"
API_FIELDS = [
    "id",
    "kernel_id",
    "kernel_name",
    "status",
    "submission_mode",
    "is_correct",
    "sol_score",
    "latency_ms",
    "fast_1_count",
    "fast_1_total",
    "avg_speedup",
    "submitted_at",
    "finished_at",
    "error_log",
]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ingest_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_the_same_seed_writes_the_same_file(tmp_path: Path) -> None:
    generate = generator().generate
    first = generate(tmp_path / "a.jsonl", 300, seed=7).read_bytes()
    assert generate(tmp_path / "b.jsonl", 300, seed=7).read_bytes() == first
    assert generate(tmp_path / "c.jsonl", 300, seed=8).read_bytes() != first


def test_records_look_like_the_leaderboards_and_import_as_plain_records(tmp_path: Path) -> None:
    path = generator().generate(tmp_path / "sol.jsonl", 2000, seed=1)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(list(record) == API_FIELDS for record in records)
    assert len({record["id"] for record in records}) == len(records)
    statuses = Counter((record["status"], record["is_correct"]) for record in records)
    assert statuses[("COMPLETED", True)] > len(records) * 0.7
    assert statuses[("COMPLETED", False)] and statuses[("FAILED", None)]
    assert any(record["submission_mode"] == "private" for record in records)
    latencies = [record["latency_ms"] for record in records if record["latency_ms"] is not None]
    assert 0.002 <= min(latencies) < 0.01 and 5 < max(latencies) <= 50
    assert isinstance(detect(path), SubmissionsAdapter)
    assert sum(isinstance(item, RunItem) for item in SubmissionsAdapter().read(path)) == len(records)


def test_native_manifests_carry_the_same_runs(tmp_path: Path) -> None:
    module = generator()
    submissions = module.generate(tmp_path / "sol.jsonl", 50, seed=3)
    manifests = module.generate(tmp_path / "manifests.jsonl", 50, seed=3, kind="kernelindex")
    assert isinstance(detect(manifests), ManifestAdapter)
    digests = [item.run.digest for item in ManifestAdapter().read(manifests) if isinstance(item, RunItem)]
    assert digests == [item.run.digest for item in SubmissionsAdapter().read(submissions) if isinstance(item, RunItem)]

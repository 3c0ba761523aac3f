"""KernelBench baseline timing files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from records.errors import RecordError
from records.manifest import RunItem
from records.sources.kernelbench import BaselineTimingAdapter
from tests.conftest import SAMPLE_DATA

EAGER = SAMPLE_DATA / "kernelbench" / "H100_Modal" / "baseline_time_torch.json"
COMPILE = SAMPLE_DATA / "kernelbench" / "H100_Modal" / "baseline_time_torch_compile_inductor_default.json"


def runs_in(path: Path) -> list[RunItem]:
    return [item for item in BaselineTimingAdapter().read(path) if isinstance(item, RunItem)]


def test_every_problem_becomes_a_run_of_its_baseline() -> None:
    runs = runs_in(EAGER)
    assert len(runs) == 250
    first = runs[0]
    spec = first.run.value["spec"]
    assert spec["sourceNative"]["externalId"] == "H100_Modal/torch/level1/1_Square_matrix_multiplication_.py"
    assert spec["timing"]["latencyNs"] == {"mean": 2660000, "std": 19900, "min": 2650000, "max": 2860000}
    assert spec["timing"]["trials"] == 100
    assert spec["status"] == "measured"
    assert "observedAt" not in spec  # the files carry no timestamp
    assert first.documents["implementation"].value["spec"]["name"] == "PyTorch eager"


def test_the_compile_file_names_backend_and_mode() -> None:
    implementation = runs_in(COMPILE)[0].documents["implementation"].value["spec"]
    assert implementation["name"] == "torch.compile (inductor, mode default)"


def test_one_environment_per_gpu_and_host() -> None:
    environments = {item.documents["environment"].digest for item in runs_in(EAGER) + runs_in(COMPILE)}
    assert len(environments) == 1
    environment = runs_in(EAGER)[0].documents["environment"].value
    assert environment["spec"]["hardware"] == {
        "vendor": "nvidia",
        "product": "NVIDIA H100 80GB HBM3",
        "architecture": "sm_90",
    }
    assert environment["metadata"]["labels"] == {"host": "H100_Modal"}


def test_eager_and_compile_runs_of_one_problem_share_a_workload() -> None:
    eager, compiled = runs_in(EAGER)[0], runs_in(COMPILE)[0]
    assert eager.documents["workload"].digest == compiled.documents["workload"].digest


def test_a_negative_time_names_level_problem_and_field(tmp_path: Path) -> None:
    document = json.loads(EAGER.read_text())
    document["level2"]["1_Conv2D_ReLU_BiasAdd.py"]["mean"] = -1.0
    path = tmp_path / "H100_Modal" / "baseline_time_torch.json"
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    with pytest.raises(RecordError) as raised:
        runs_in(path)
    assert raised.value.field == "level2.1_Conv2D_ReLU_BiasAdd.py.mean"


def test_a_renamed_file_still_imports_under_its_own_name(tmp_path: Path) -> None:
    path = tmp_path / "L40S" / "my_timings.json"
    path.parent.mkdir()
    shutil.copy(EAGER, path)
    spec = runs_in(path)[0].run.value["spec"]
    assert spec["sourceNative"]["externalId"].startswith("L40S/my_timings/level1/")

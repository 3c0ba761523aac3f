"""The hardware class a worker reports, read without torch: override, nvidia-smi, else the CPU."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

from harness.parent.environment import detect_hardware_class, host_environment
from records.hardware import hardware_class_named, hardware_class_of


def fake_nvidia_smi(folder: Path, line: str) -> None:
    """An nvidia-smi on PATH that answers the harness's query as the driver's tool would."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '{line}'\n")
    script.chmod(0o755)


def test_without_a_gpu_the_class_names_the_cpu_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELINDEX_HARDWARE_CLASS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))

    hardware = host_environment("cpu")["hardware"]
    assert detect_hardware_class() == hardware["class"] == hardware_class_of(hardware["product"])
    assert hardware["class"].startswith("cpu-") and hardware["class"] != "cpu-"
    assert hardware_class_named(hardware["class"]).device == "cpu"
    assert hardware["vendor"] in {"intel", "amd", "arm", "unknown"}
    assert hardware["product"]


def test_a_gpu_is_classed_by_its_product_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELINDEX_HARDWARE_CLASS", raising=False)
    fake_nvidia_smi(tmp_path / "bin", "NVIDIA H100 80GB HBM3, 570.86.15, 1980 MHz, 2619 MHz, 1980 MHz, 2619 MHz")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")

    assert detect_hardware_class() == "nvidia-h100"
    environment = host_environment("cuda")
    assert environment["hardware"] == {
        "vendor": "nvidia",
        "product": "NVIDIA H100 80GB HBM3",
        "architecture": "sm_90",
        "class": "nvidia-h100",
    }
    assert environment["driver"] == "570.86.15"
    assert environment["clocks_mhz"]["clocks.max.sm"] == "1980 MHz"


def test_the_class_can_be_set_for_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELINDEX_HARDWARE_CLASS", "nvidia-b200")

    assert detect_hardware_class() == "nvidia-b200"
    assert host_environment("cpu")["hardware_class"] == "nvidia-b200"


def test_the_power_limit_and_clocks_set_away_from_their_defaults_are_in_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNELINDEX_HARDWARE_CLASS", raising=False)
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "nvidia-smi"
    # Two queries, as the driver's tool answers each: the main fields, then power and application clocks.
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in *power.limit*) echo "700.00 W, 700.00 W, 1755 MHz, 1980 MHz, 0x0000000000000001";;\n'
        '*) echo "NVIDIA H100 80GB HBM3, 570.86.15, 1980 MHz, 2619 MHz, 1980 MHz, 2619 MHz";; esac\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    environment = host_environment("cuda")

    assert environment["driver"] == "570.86.15"
    assert environment["power_limit"] == "700.00 W"
    assert environment["clocks_locked"] is True
    assert environment["clocks_throttle_reasons"] == "0x0000000000000001"


def test_the_environment_names_its_host_without_its_name() -> None:
    """The quorum may ask for reruns on different hosts (records/quorum.py): the attested environment tells
    hosts apart by a digest, the same on every run of one host, that names neither its network name nor its id."""
    first, again = host_environment("cpu")["hostId"], host_environment("cpu")["hostId"]
    assert first == again and len(first) == 16 and int(first, 16) >= 0
    assert platform.node() not in first

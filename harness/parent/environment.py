"""What the evaluation ran on: the host's part, read without importing torch.

The judge adds what only torch can tell (device name, compute capability, CUDA
and library versions: harness.judge.environment); this module reads the rest cheaply, so a worker can ask
for its hardware class on start-up without paying for a torch import.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from records.hardware import cpu_class_of, hardware_class_of, hardware_spec

HARDWARE_CLASS_VARIABLE = "KERNELINDEX_HARDWARE_CLASS"
_NVIDIA_SMI_TIMEOUT = 10.0
_GPU_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem")
# Asked for apart: a driver that knows one of them not fails the whole query, and these only add to the block.
# Application clocks set away from their defaults (nvidia-smi -ac) or clocks locked (-lgc) make timings differ.
_POWER_AND_CLOCK_FIELDS = (
    "power.limit",
    "power.default_limit",
    "clocks.applications.graphics",
    "clocks.default_applications.graphics",
    "clocks_event_reasons.active",
)


def detect_hardware_class() -> str:
    """This host's class ('nvidia-h100', 'cpu-amd-epyc-7b13'): the override variable, else the first GPU's,
    else its CPU model's."""
    override = os.environ.get(HARDWARE_CLASS_VARIABLE, "").strip()
    if override:
        return override
    gpus = nvidia_gpus()
    return hardware_class_of(gpus[0]["name"]) if gpus else cpu_class_of(cpu_product())


def nvidia_gpus() -> list[dict[str, str]]:
    """One row per GPU from nvidia-smi, with the fields it could read; [] without nvidia-smi or a driver."""
    rows = _query_gpus(_GPU_FIELDS)
    extra = _query_gpus(_POWER_AND_CLOCK_FIELDS)
    if len(extra) == len(rows):
        for row, more in zip(rows, extra, strict=True):
            row.update(more)
    return rows


def _query_gpus(fields: tuple[str, ...]) -> list[dict[str, str]]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        completed = subprocess.run(
            ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=_NVIDIA_SMI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if completed.returncode != 0:
        return []
    rows = []
    for line in completed.stdout.splitlines():
        values = [value.strip() for value in line.split(",")]
        if len(values) == len(fields) and values[0]:
            rows.append({key: value for key, value in zip(fields, values, strict=True) if "N/A" not in value})
    return rows


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo; {} where there is none."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_product() -> str:
    """This host's CPU model as its class is named from it: the model name, and where that names no model
    number (a virtual machine's "AMD EPYC", "Intel(R) Xeon(R) Processor"), the family and model numbers
    /proc/cpuinfo gives beside it, which tell the generations such a name hides apart."""
    _, model = cpu_model()
    fields = _cpuinfo()
    if not any(c.isdigit() for c in cpu_class_of(model)) and fields.get("cpu family") and fields.get("model"):
        return f"{model} (family {fields['cpu family']}, model {fields['model']})"
    return model


def cpu_model() -> tuple[str, str]:
    """(vendor, model) of this host's CPU: ('intel', 'Intel(R) Xeon(R) ...'); the vendor is '' when unknown."""
    fields = _cpuinfo()
    vendor_id = fields.get("vendor_id", "")
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(vendor_id, "")
    if not vendor and (fields.get("CPU implementer") or platform.machine() in {"aarch64", "arm64"}):
        vendor = "arm"
    model = fields.get("model name") or fields.get("Model") or platform.processor() or platform.machine()
    return vendor, model


def host_id() -> str:
    """A stable name of this host that tells two hosts apart without naming either: a digest of its machine id
    (systemd's /etc/machine-id), or of its network name where it has none. The quorum may ask that agreeing
    reruns come from different hosts (records/quorum.py)."""
    try:
        identity = Path("/etc/machine-id").read_text().strip()
    except OSError:
        identity = ""
    seed = identity or platform.node()
    return hashlib.sha256(f"kernelindex-host:{seed}".encode()).hexdigest()[:16] if seed else ""


def host_environment(device: str) -> dict[str, Any]:
    """The host's part of the environment block; the GPU's when the device is CUDA, else the CPU's."""
    vendor, model = cpu_model()
    environment: dict[str, Any] = {
        "cpu": model,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "hostId": host_id(),
    }
    gpus = nvidia_gpus() if device.startswith("cuda") else []
    if gpus:
        gpu = gpus[_device_index(device)] if _device_index(device) < len(gpus) else gpus[0]
        environment["driver"] = gpu.get("driver_version")
        environment["clocks_mhz"] = {key: value for key, value in gpu.items() if key.startswith("clocks.")}
        environment["power_limit"] = gpu.get("power.limit")
        environment["power_default_limit"] = gpu.get("power.default_limit")
        environment["clocks_throttle_reasons"] = gpu.get("clocks_event_reasons.active")
        environment["clocks_locked"] = clocks_locked(gpu)
        hardware = hardware_spec(gpu["name"])
    else:
        hardware = {"vendor": vendor or "unknown", "product": cpu_product()}
    override = os.environ.get(HARDWARE_CLASS_VARIABLE, "").strip()
    hardware["class"] = override or (hardware_class_of(hardware["product"]) if gpus else cpu_class_of(cpu_product()))
    environment["hardware"] = hardware
    environment["hardware_class"] = hardware["class"]
    return environment


def clocks_locked(gpu: dict[str, str]) -> bool | None:
    """Whether the GPU's application clocks were set away from their defaults (nvidia-smi -ac); None when
    nvidia-smi did not say. Clocks locked with -lgc do not show here: the throttle reasons and the SM clock
    beside its maximum are in the block for a reader to judge."""
    applications, default = gpu.get("clocks.applications.graphics"), gpu.get("clocks.default_applications.graphics")
    if applications is None or default is None:
        return None
    return applications != default


def _device_index(device: str) -> int:
    _, _, index = device.partition(":")
    return int(index) if index.isdigit() else 0

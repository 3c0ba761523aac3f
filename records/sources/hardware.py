"""GPU names as sources spell them, mapped to one product name and architecture."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Short names used by leaderboard APIs ("B200") -> the product name the driver reports.
PRODUCT_NAMES = {
    "B200": "NVIDIA B200",
    "B300": "NVIDIA B300",
    "GB200": "NVIDIA GB200",
    "H100": "NVIDIA H100",
    "H200": "NVIDIA H200",
    "H20": "NVIDIA H20",
    "A100": "NVIDIA A100",
    "L40S": "NVIDIA L40S",
    "L4": "NVIDIA L4",
    "T4": "Tesla T4",
    "MI300X": "AMD Instinct MI300X",
}

# Product-name fragments -> compute capability, most specific first.
ARCHITECTURES = (
    ("GB200", "sm_100"),
    ("B200", "sm_100"),
    ("B300", "sm_103"),
    ("GH200", "sm_90"),
    ("H100", "sm_90"),
    ("H200", "sm_90"),
    ("H800", "sm_90"),
    ("H20", "sm_90"),
    ("L40", "sm_89"),
    ("L4", "sm_89"),
    ("RTX 4090", "sm_89"),
    ("A100", "sm_80"),
    ("A800", "sm_80"),
    ("A10", "sm_86"),
    ("RTX 3090", "sm_86"),
    ("T4", "sm_75"),
    ("V100", "sm_70"),
    ("MI300X", "gfx942"),
)


def product_name(gpu: str) -> str:
    return PRODUCT_NAMES.get(gpu.strip(), gpu.strip())


def architecture_of(product: str) -> str | None:
    upper = product.upper()
    for fragment, architecture in ARCHITECTURES:
        if fragment in upper:
            return architecture
    return None


def vendor_of(product: str) -> str:
    upper = product.upper()
    if "AMD" in upper or "INSTINCT" in upper or upper.startswith("MI"):
        return "amd"
    if "INTEL" in upper:
        return "intel"
    return "nvidia"


def hardware_spec(product: str) -> dict[str, Any]:
    """The `hardware` part of an ExecutionEnvironment spec."""
    spec: dict[str, Any] = {"vendor": vendor_of(product), "product": product}
    architecture = architecture_of(product)
    if architecture:
        spec["architecture"] = architecture
    return spec


CPU_CLASS = "cpu"


def hardware_class_of(product: str) -> str:
    """The class of machine a rerun queue serves: 'nvidia-h100' for every H100 variant, 'cpu' for processors.

    Reruns are routed, and evidence is decided, per class: an H100 SXM and an
    H100 PCIe are one class, as the sources that publish them treat them.
    """
    upper = product.strip().upper()
    if not upper or upper == "CPU":
        return CPU_CLASS
    for fragment, _ in ARCHITECTURES:
        if fragment in upper:
            return f"{vendor_of(product)}-{fragment.lower().replace(' ', '')}"
    return re.sub(r"[^a-z0-9]+", "-", product.lower()).strip("-")


def hardware_class(hardware: Mapping[str, Any]) -> str:
    """The class of an ExecutionEnvironment's `hardware`: its explicit `class`, else derived from the product."""
    explicit = hardware.get("class")
    if isinstance(explicit, str) and explicit:
        return explicit
    return hardware_class_of(str(hardware.get("product", "")))

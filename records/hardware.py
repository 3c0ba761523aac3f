"""Hardware: GPU names as sources spell them, and the registry of hardware classes (HARDWARE_CLASSES).

Pure Python, imported by the web app, the Celery workers and the harness alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

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


@dataclass(frozen=True)
class MemoryBandwidth:
    """A class's peak memory bandwidth and the document it is read from: what its physics floor is made of
    (records.floor). The figure is the fastest product of the class, so that a floor never flags an honest run
    of any of them."""

    bytes_per_second: float
    source: str

    @property
    def label(self) -> str:
        """'3.9 TB/s', as datasheets write it."""
        return f"{self.bytes_per_second / 1e12:.4g} TB/s"


@dataclass(frozen=True)
class HardwareClass:
    """A class of machine: what a rerun queue serves, and what evidence is decided per.

    An H100 SXM and an H100 PCIe are one class, as the sources that publish them
    treat them. Every layer that names a class (the rerun request, the queue a
    worker consumes, the page that says whether a worker is live) reads it here.
    """

    name: str
    vendor: str
    # What the harness runs the kernel on: "cpu", or "cuda" (PyTorch's name for NVIDIA and ROCm GPUs alike).
    device: Literal["cpu", "cuda"]
    # Product-name fragments the class matches ("H100" matches "NVIDIA H100 80GB HBM3").
    products: tuple[str, ...]
    architecture: str | None = None
    # None: no published figure is known here, and the class has no physics floor (never a guess).
    memory_bandwidth: MemoryBandwidth | None = None

    @property
    def queue(self) -> str:
        """The Celery queue whose workers run this class's reruns."""
        return queue_of(self.name)


QUEUE_PREFIX = "reruns."
# A processor whose model its run did not name ("CPU"). A CPU's class names its model, as a GPU's names the
# product: a kernel's speedup over its reference moves between CPU models as it does between GPUs (the demo's
# claims, measured on an AMD EPYC, ran 1.5 times faster on an Intel Xeon with AVX-512), so a rerun on another
# model is shown and moves nothing. "cpu" is the class of every run that names no model, and of a worker told so.
CPU_CLASS = "cpu"
CPU_CLASS_PREFIX = "cpu-"
# How processors name themselves (/proc/cpuinfo's model name): a host that reports its processor's model
# ("AMD EPYC 7B13", "Intel(R) Xeon(R) Processor") is a CPU, as one that says only "CPU" is.
CPU_MODEL_FRAGMENTS = ("XEON", "EPYC", "RYZEN", "THREADRIPPER", "CORE(TM)", "PROCESSOR", "NEOVERSE", "APPLE M")
# What a model name says that is not the model: trademarks, the clock it was sold at, "CPU", "Processor".
_NOT_THE_MODEL = re.compile(r"\((?:R|TM)\)|@.*$|\b(?:CPU|Processor|\d+-Core)\b", re.IGNORECASE)
_CPU_CLASS_NAME = re.compile(r"cpu-[a-z0-9]+(?:-[a-z0-9]+)*")
_CLASS_NAME_LENGTH = 64


def _gpu(vendor: str, fragment: str, architecture: str, bandwidth: MemoryBandwidth | None = None) -> HardwareClass:
    name = f"{vendor}-{fragment.lower().replace(' ', '')}"
    return HardwareClass(name, vendor, "cuda", (fragment,), architecture, bandwidth)


# Peak memory bandwidth per class, each the vendor's datasheet figure for the class's fastest product (a class
# holds every form factor of a GPU, and a floor must hold for all of them).
H100_BANDWIDTH = MemoryBandwidth(
    3.9e12,
    "NVIDIA H100 Tensor Core GPU datasheet: 3.35 TB/s HBM3 on H100 SXM, 3.9 TB/s on H100 NVL, the class's fastest",
)
H200_BANDWIDTH = MemoryBandwidth(4.8e12, "NVIDIA H200 Tensor Core GPU datasheet: 4.8 TB/s HBM3e (H200 SXM and NVL)")
B200_BANDWIDTH = MemoryBandwidth(8e12, "NVIDIA HGX B200 / DGX B200 datasheet: 8 TB/s HBM3e per B200 GPU")
GB200_BANDWIDTH = MemoryBandwidth(8e12, "NVIDIA GB200 NVL72 datasheet: 8 TB/s HBM3e per Blackwell GPU")
A100_BANDWIDTH = MemoryBandwidth(
    2.039e12, "NVIDIA A100 Tensor Core GPU datasheet: 2,039 GB/s HBM2e on A100 80GB SXM, the class's fastest"
)
L40_BANDWIDTH = MemoryBandwidth(864e9, "NVIDIA L40 and L40S datasheets: 864 GB/s GDDR6")
L4_BANDWIDTH = MemoryBandwidth(300e9, "NVIDIA L4 Tensor Core GPU datasheet: 300 GB/s GDDR6")
T4_BANDWIDTH = MemoryBandwidth(320e9, "NVIDIA T4 Tensor Core GPU datasheet: 320+ GB/s GDDR6")
MI300X_BANDWIDTH = MemoryBandwidth(5.3e12, "AMD Instinct MI300X accelerator data sheet: 5.3 TB/s peak HBM3")
# A CPU class is deliberately generous: a floor must never flag an honest kernel, and a CPU kernel's small
# outputs are written to its caches, not to memory. 100 TB/s is above any CPU socket's memory (none reaches
# 2 TB/s; the HBM2e of Intel's Xeon CPU Max Series, the fastest, is quoted near 1 TB/s) and above the store
# bandwidth of every core's L1 cache together on the largest sockets (192 cores x 64 B a cycle x 4 GHz is about
# 50 TB/s). It catches only claims no processor could make.
CPU_BANDWIDTH = MemoryBandwidth(
    100e12,
    "a deliberately generous CPU bound: above any socket's memory bandwidth and all its cores' L1 caches together",
)


# Most specific first: a product is in the first class one of whose fragments it contains ("GB200" before "B200").
HARDWARE_CLASSES = (
    HardwareClass(CPU_CLASS, "any", "cpu", ("CPU",), memory_bandwidth=CPU_BANDWIDTH),
    _gpu("nvidia", "GB200", "sm_100", GB200_BANDWIDTH),
    _gpu("nvidia", "B200", "sm_100", B200_BANDWIDTH),
    _gpu("nvidia", "B300", "sm_103"),
    _gpu("nvidia", "GH200", "sm_90"),
    _gpu("nvidia", "H100", "sm_90", H100_BANDWIDTH),
    _gpu("nvidia", "H200", "sm_90", H200_BANDWIDTH),
    _gpu("nvidia", "H800", "sm_90"),
    _gpu("nvidia", "H20", "sm_90"),
    _gpu("nvidia", "L40", "sm_89", L40_BANDWIDTH),
    _gpu("nvidia", "L4", "sm_89", L4_BANDWIDTH),
    _gpu("nvidia", "RTX 4090", "sm_89"),
    _gpu("nvidia", "A100", "sm_80", A100_BANDWIDTH),
    _gpu("nvidia", "A800", "sm_80"),
    _gpu("nvidia", "A10", "sm_86"),
    _gpu("nvidia", "RTX 3090", "sm_86"),
    _gpu("nvidia", "T4", "sm_75", T4_BANDWIDTH),
    _gpu("nvidia", "V100", "sm_70"),
    _gpu("amd", "MI300X", "gfx942", MI300X_BANDWIDTH),
)
CLASSES = {hardware.name: hardware for hardware in HARDWARE_CLASSES}


def queue_of(name: str) -> str:
    """The rerun queue of a class name (a class no longer registered keeps the queue it was sent to)."""
    return f"{QUEUE_PREFIX}{name}"


class UnknownHardwareClassError(ValueError):
    """A class name no registry entry has; the message lists the classes there are."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name!r} is not a hardware class; the classes are {', '.join(CLASSES)}")
        self.name = name


def hardware_class_named(name: str) -> HardwareClass:
    """The registered class of that name, or a CPU model's class ('cpu-amd-epyc-7b13'), or
    UnknownHardwareClassError naming every class."""
    named = name.strip().lower()
    hardware = CLASSES.get(named)
    if hardware is not None:
        return hardware
    if len(named) <= _CLASS_NAME_LENGTH and _CPU_CLASS_NAME.fullmatch(named):
        return HardwareClass(named, vendor_of(named.replace("-", " ")), "cpu", (named,), None, CPU_BANDWIDTH)
    raise UnknownHardwareClassError(name)


def memory_bandwidth_of(name: str) -> MemoryBandwidth | None:
    """The peak memory bandwidth of a class name (a CPU model's class has the CPU bound); None for a class with
    no known figure, or no class at all (a product no class matches names a class of its own)."""
    try:
        return hardware_class_named(name).memory_bandwidth
    except UnknownHardwareClassError:
        return None


def cpu_class_of(model: str) -> str:
    """A CPU model's class: 'cpu-amd-epyc-7b13' for 'AMD EPYC 7B13', 'cpu-intel-xeon-platinum-8481c' for
    'Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz'; 'cpu' where the model names nothing but a CPU."""
    slug = re.sub(r"[^a-z0-9]+", "-", _NOT_THE_MODEL.sub(" ", model).lower()).strip("-")
    if not slug:
        return CPU_CLASS
    return (CPU_CLASS_PREFIX + slug)[:_CLASS_NAME_LENGTH].rstrip("-")


def is_cpu_class(name: str) -> bool:
    return name == CPU_CLASS or name.startswith(CPU_CLASS_PREFIX)


def _matching_class(product: str) -> HardwareClass | None:
    upper = product.upper()
    for hardware in HARDWARE_CLASSES:
        if hardware.device != "cpu" and any(fragment in upper for fragment in hardware.products):
            return hardware
    return None


def product_name(gpu: str) -> str:
    return PRODUCT_NAMES.get(gpu.strip(), gpu.strip())


def architecture_of(product: str) -> str | None:
    hardware = _matching_class(product)
    return hardware.architecture if hardware else None


def vendor_of(product: str) -> str:
    upper = product.upper()
    if "AMD" in upper or "INSTINCT" in upper or upper.startswith("MI") or "EPYC" in upper or "RYZEN" in upper:
        return "amd"
    if "INTEL" in upper:
        return "intel"
    if "NEOVERSE" in upper or "APPLE" in upper:
        return "arm"
    return "nvidia"


def hardware_spec(product: str) -> dict[str, Any]:
    """The `hardware` part of an ExecutionEnvironment spec."""
    spec: dict[str, Any] = {"vendor": vendor_of(product), "product": product}
    architecture = architecture_of(product)
    if architecture:
        spec["architecture"] = architecture
    return spec


def hardware_class_of(product: str) -> str:
    """The class name of a product: 'nvidia-h100' for every H100 variant, a processor's model's for a CPU
    ('cpu-amd-epyc-7b13'), 'cpu' for a processor of no named model.

    A product no class matches gets a name made from it, so that its runs still
    group by machine; no worker serves such a name until the registry has it.
    """
    upper = product.strip().upper()
    if not upper or upper == CPU_CLASS.upper():
        return CPU_CLASS
    if any(fragment in upper for fragment in CPU_MODEL_FRAGMENTS):
        return cpu_class_of(product)
    hardware = _matching_class(product)
    if hardware is not None:
        return hardware.name
    return re.sub(r"[^a-z0-9]+", "-", product.lower()).strip("-")


def hardware_class(hardware: Mapping[str, Any]) -> str:
    """The class of an ExecutionEnvironment's `hardware`: its explicit `class`, else derived from the product."""
    explicit = hardware.get("class")
    if isinstance(explicit, str) and explicit:
        return explicit
    return hardware_class_of(str(hardware.get("product", "")))

"""What the evaluation ran on: the part only torch can tell (device name, compute capability, CUDA and library
versions), read by the judge and sent to the parent, which adds the host's part (harness.parent.environment)."""

from __future__ import annotations

import contextlib
from typing import Any


def torch_environment(device: str) -> dict[str, Any]:
    import platform
    from importlib import metadata

    import torch

    libraries: dict[str, str] = {"torch": str(torch.__version__)}
    for name in ("triton", "numpy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            libraries[name] = metadata.version(name)
    environment: dict[str, Any] = {
        "libraries": libraries,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
    }
    if device.startswith("cuda"):
        index = torch.device(device).index or 0
        properties = torch.cuda.get_device_properties(index)
        environment.update(
            device_name=properties.name,
            compute_capability=f"sm_{properties.major}{properties.minor}",
            device_memory_mb=properties.total_memory // 2**20,
            multiprocessors=properties.multi_processor_count,
            l2_cache_mb=round(getattr(properties, "L2_cache_size", 0) / 2**20, 2),
            cudnn=torch.backends.cudnn.version(),  # type: ignore[no-untyped-call]
        )
    else:
        environment["device_name"] = "cpu"
        environment["cpu_threads"] = torch.get_num_threads()
    return environment

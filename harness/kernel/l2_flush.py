"""The L2 flush the served processes do before each call on a GPU.

A buffer twice the size of the L2 cache, written before every call, so that no
call finds its data left in L2 by the one before. It is written in the kernel's
process, which a hostile solution can reach (harness/README.md, "Known limits").
"""

from __future__ import annotations

import torch


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)) or 64 * 2**20
    return torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device=device)

"""Inputs of one case, built inside the child: random per dtype, scalars, custom, safetensors.

Everything random comes from one generator seeded per case, on the CPU, so a
case's inputs are the same on every host and device and for every solution.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "float4_e2m1fn_x2": torch.float4_e2m1fn_x2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
# The safetensors header's dtype names.
_SAFETENSORS_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
# Random integers stay small and non-negative: integer inputs are mostly indices and lengths.
_RANDOM_INT_HIGH = 64


class InputError(Exception):
    """An input that cannot be built; `status` says whose fault it is."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def build_inputs(case: Mapping[str, Any], device: str, custom_entrypoint: Callable[..., Any] | None) -> dict[str, Any]:
    """The case's inputs by name, in the definition's order, on the device."""
    generator = torch.Generator().manual_seed(case["seed"])
    values: dict[str, Any] = {}
    for name, spec in case["inputs"].items():
        source = spec["source"]
        if source == "scalar":
            values[name] = spec["value"]
        elif source == "random":
            values[name] = random_value(spec["shape"], DTYPES[spec["dtype"]], generator)
        elif source == "safetensors":
            values[name] = _safetensors_input(name, spec)
    custom = [name for name, spec in case["inputs"].items() if spec["source"] == "custom"]
    if custom:
        values.update(_custom_inputs(case, custom, values, device, custom_entrypoint))
    ordered = {name: values[name] for name in case["inputs"]}
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value for name, value in ordered.items()}


def random_value(shape: list[int] | None, dtype: torch.dtype, generator: torch.Generator) -> Any:
    if shape is None:
        scalar = random_value([], dtype, generator)
        return scalar.item()
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype == torch.uint8 or (dtype.itemsize == 1 and not dtype.is_floating_point and dtype != torch.int8):
        return torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8).view(dtype)
    if not dtype.is_floating_point:
        return torch.randint(0, _RANDOM_INT_HIGH, shape, generator=generator, dtype=dtype)
    return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)


def read_safetensors(path: Path, key: str) -> torch.Tensor:
    """One tensor of a .safetensors file: an 8-byte little-endian header length, a JSON header, the raw data."""
    with path.open("rb") as stream:
        (header_length,) = struct.unpack("<Q", stream.read(8))
        header = json.loads(stream.read(header_length))
        if key not in header:
            keys = ", ".join(sorted(k for k in header if k != "__metadata__"))
            raise KeyError(f"no tensor {key!r} in {path} (it holds {keys})")
        entry = header[key]
        begin, end = entry["data_offsets"]
        stream.seek(8 + header_length + begin)
        data = bytearray(stream.read(end - begin))
    dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
    flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
    return flat.reshape(entry["shape"])


def _safetensors_input(name: str, spec: Mapping[str, Any]) -> torch.Tensor:
    if spec.get("missing"):
        raise InputError("RUNTIME_ERROR", f"input {name!r}: {spec['missing']}")
    try:
        tensor = read_safetensors(Path(spec["file"]), spec["key"])
    except (OSError, KeyError, ValueError) as error:
        raise InputError("RUNTIME_ERROR", f"input {name!r}: cannot read {spec['key']!r}: {error}") from None
    if spec["shape"] is not None and list(tensor.shape) != spec["shape"]:
        raise InputError(
            "RUNTIME_ERROR",
            f"input {name!r}: the file holds shape {list(tensor.shape)}, the case needs {spec['shape']}",
        )
    # Stored dtypes are converted to the declared one (a file may keep indices as int64 for an int32 input).
    return tensor.to(DTYPES[spec["dtype"]])


def _custom_inputs(
    case: Mapping[str, Any],
    names: list[str],
    values: Mapping[str, Any],
    device: str,
    entrypoint: Callable[..., Any] | None,
) -> dict[str, Any]:
    if entrypoint is None:
        raise InputError("INVALID_REFERENCE", "the case has custom inputs but the reference has no entrypoint")
    scalars = {name: value for name, value in values.items() if not isinstance(value, torch.Tensor)}
    # The entrypoint draws from torch's global generators: seed them per case as well.
    torch.manual_seed(case["seed"])
    if device.startswith("cuda"):
        torch.cuda.manual_seed_all(case["seed"])
    produced = entrypoint({**case["axes"], **scalars}, torch.device(device))
    if not isinstance(produced, Mapping):
        raise InputError("INVALID_REFERENCE", f"the custom inputs entrypoint returned {type(produced).__name__}")
    missing = [name for name in names if name not in produced]
    if missing:
        raise InputError("INVALID_REFERENCE", f"the custom inputs entrypoint gave no {', '.join(missing)}")
    return {name: produced[name] for name in names}


def clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def changed_input(originals: Mapping[str, Any], copies: Mapping[str, Any]) -> str | None:
    """The first input the solution wrote into, with where; None when all are bit for bit as built."""
    for name, original in originals.items():
        copy = copies[name]
        if not isinstance(original, torch.Tensor):
            continue
        if original.shape != copy.shape or original.dtype != copy.dtype:
            before_kind, after_kind = f"{tuple(original.shape)} {original.dtype}", f"{tuple(copy.shape)} {copy.dtype}"
            return f"input {name!r} changed from {before_kind} to {after_kind}"
        # Bytes, not values: NaN != NaN, and -0.0 == 0.0.
        before, after = _bytes_of(original), _bytes_of(copy)
        if not torch.equal(before, after):
            first = int(torch.nonzero(before != after)[0].item()) // max(original.element_size(), 1)
            index = (
                tuple(int(i) for i in torch.unravel_index(torch.tensor(first), original.shape))
                if original.dim()
                else ()
            )
            return f"input {name!r} was written to (first changed element at index {index})"
    return None


def _bytes_of(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().reshape(-1).contiguous().view(torch.uint8)

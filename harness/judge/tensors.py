"""Inputs of one case, built inside the child: random per dtype and name, scalars, custom, safetensors.

Everything random comes from one generator seeded per case (or per round, when
the judge passes a seed), on the CPU, so a case's inputs are the same on every
host and device and for every solution. The sources seed once and draw on the
device; the distributions are theirs, the stream of numbers is ours.

How a random input is drawn is the protocol's `input_rule`:
- "kernelindex": randn floats, integers in [0, 64) (mostly indices and lengths),
  and the ranges names require (`NameRule.required`: a variance is positive,
  a decay so described negative).
- "flashinfer-bench": its dtype ranges (flashinfer-bench 0.1.2 bench/utils.py, _rand_tensor).
- "sol-execbench": the same dtype ranges, and before them rules on the input's
  name that make norm weights ones, biases zeros, weight matrices randn/sqrt(fan_in),
  RoPE tables cos/sin, masks 0/1 or causal, and so on (SOL-ExecBench
  src/sol_execbench/core/bench/io.py, _generate_heuristic_tensor): `NAME_RULES`.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import struct
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
# Dtypes torch stores on the CPU but computes with only on CUDA: no CPU kernel converts, fills or multiplies
# packed four-bit floats (torch 2.13: `"copy_kernel" not implemented for 'Float4_e2m1fn_x2'`; `_scaled_mm` with
# their block scales, "Invalid scaling configuration"). A reference that fails on the CPU with such an input
# (SOL-ExecBench's nvfp4 problems) needs a CUDA device, not a fix.
CUDA_ONLY_DTYPES = frozenset({"float4_e2m1fn_x2"})
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


def build_inputs(
    case: Mapping[str, Any],
    device: str,
    custom_entrypoint: Callable[..., Any] | None,
    *,
    rule: str = "kernelindex",
    seed: int | None = None,
) -> dict[str, Any]:
    """The case's inputs by name, in the definition's order, on the device.

    `rule` is a protocol's input_rule; `seed`, when given, replaces the case's
    own (the judge draws fresh inputs for each correctness round).
    """
    seed = case["seed"] if seed is None else seed
    generator = torch.Generator().manual_seed(seed)
    values: dict[str, Any] = {}
    for name, spec in case["inputs"].items():
        source = spec["source"]
        if source == "scalar":
            values[name] = spec["value"]
        elif source == "random":
            values[name] = random_input(name, spec, generator, rule, case.get("op_type"))
        elif source == "safetensors":
            values[name] = _safetensors_input(name, spec)
    custom = [name for name, spec in case["inputs"].items() if spec["source"] == "custom"]
    if custom:
        values.update(_custom_inputs(case, seed, custom, values, device, custom_entrypoint))
    ordered = {name: values[name] for name in case["inputs"]}
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value for name, value in ordered.items()}


def random_input(
    name: str, spec: Mapping[str, Any], generator: torch.Generator, rule: str, op_type: str | None = None
) -> Any:
    """One random input as the protocol's input rule draws it."""
    dtype, shape = DTYPES[spec["dtype"]], spec["shape"]
    if rule == "kernelindex":
        required = _required_rule(name, shape, dtype, spec.get("description"))
        return required.make(name, shape, dtype, generator) if required else random_value(shape, dtype, generator)
    if shape is None:
        return _source_random([], dtype, generator, rule).item()
    value = named_value(name, shape, dtype, spec.get("description"), generator) if rule == "sol-execbench" else None
    if value is None:
        value = _source_random(shape, dtype, generator, rule)
    if op_type == "sampling" and name == "probs":
        # Both sources: a sampling problem's "probs" is a softmax of what was drawn
        # (SOL-ExecBench core/bench/io.py gen_inputs; flashinfer-bench 0.1.2 bench/utils.py gen_inputs).
        value = torch.softmax(value, dim=-1)
    return value


def random_value(shape: list[int] | None, dtype: torch.dtype, generator: torch.Generator) -> Any:
    """The kernelindex rule: randn floats, small non-negative integers, random bytes."""
    if shape is None:
        scalar = random_value([], dtype, generator)
        return scalar.item()
    if dtype == torch.float4_e2m1fn_x2:
        return _random_float4(shape, generator, None)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype == torch.uint8 or (dtype.itemsize == 1 and not dtype.is_floating_point and dtype != torch.int8):
        return torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8).view(dtype)
    if not dtype.is_floating_point:
        return torch.randint(0, _RANDOM_INT_HIGH, shape, generator=generator, dtype=dtype)
    return _randn(shape, generator).to(dtype)


# Both sources' integer ranges, [low, high): SOL-ExecBench core/bench/io.py and
# flashinfer-bench 0.1.2 bench/utils.py, _rand_tensor.
SOURCE_INT_RANGES: dict[torch.dtype, tuple[int, int]] = {
    torch.int8: (-128, 128),
    torch.int16: (-1024, 1024),
    torch.int32: (-1024, 1024),
    torch.int64: (-1024, 1024),
}
# Both sources clamp fp8 draws of randn to this magnitude (same files).
SOURCE_FP8_CLAMP = 2.0


def _source_random(shape: list[int], dtype: torch.dtype, generator: torch.Generator, rule: str) -> torch.Tensor:
    """A random tensor by dtype alone, as SOL-ExecBench and FlashInfer-Bench draw it."""
    if dtype in SOURCE_INT_RANGES:
        low, high = SOURCE_INT_RANGES[dtype]
        return torch.randint(low, high, shape, generator=generator, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype == torch.uint8:
        # Neither source draws uint8 (they raise); random bytes keep such a case runnable.
        return torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return _randn(shape, generator).clamp_(-SOURCE_FP8_CLAMP, SOURCE_FP8_CLAMP).to(dtype)
    if dtype == torch.float4_e2m1fn_x2:
        # flashinfer-bench clamps to ±2 and casts, a cast torch does not implement for this dtype;
        # the clamped values are quantised instead. SOL-ExecBench quantises randn unclamped.
        return _random_float4(shape, generator, SOURCE_FP8_CLAMP if rule == "flashinfer-bench" else None)
    # float32, float16, bfloat16 (float64, which neither source draws, likewise).
    return _randn(shape, generator).to(dtype)


# A large draw of normal values is split into chunks of this many, each from a generator of its own seeded from
# the draw's, and the chunks are drawn on all the CPUs this process may use (torch draws from one generator on one
# CPU: about 100 M values a second here, the judge's largest cost on large cases). The chunk size is fixed, so the
# values depend on the seed alone, not on the host's CPUs.
NORMAL_CHUNK = 1 << 22


def _randn(shape: list[int], generator: torch.Generator) -> torch.Tensor:
    count = math.prod(shape)
    if count <= NORMAL_CHUNK:
        return torch.randn(shape, generator=generator, dtype=torch.float32)
    values = torch.empty(count, dtype=torch.float32)
    chunks = -(-count // NORMAL_CHUNK)
    seeds = torch.randint(0, 2**62, (chunks,), generator=generator, dtype=torch.int64).tolist()

    def draw(index: int) -> None:
        chunk = values[index * NORMAL_CHUNK : (index + 1) * NORMAL_CHUNK]
        chunk.normal_(generator=torch.Generator().manual_seed(seeds[index]))

    list(_drawers().map(draw, range(chunks)))
    return values.view(shape)


@functools.cache
def _drawers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0)), thread_name_prefix="draw")


# --- 4-bit floats (e2m1), two to a byte, the first in the low nibble ---------------------------

# The eight magnitudes of e2m1; code 8 + i is -FLOAT4_VALUES[i].
FLOAT4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_FLOAT4_MIDPOINTS = torch.tensor([(a + b) / 2 for a, b in itertools.pairwise(FLOAT4_VALUES)])


def _random_float4(shape: list[int], generator: torch.Generator, clamp: float | None) -> torch.Tensor:
    """randn quantised to e2m1; the declared shape counts bytes, so two values are drawn per element."""
    values = _randn([*shape[:-1], 2 * shape[-1]] if shape else [2], generator)
    if clamp is not None:
        values = values.clamp_(-clamp, clamp)
    return pack_float4(values).reshape(shape)


def pack_float4(values: torch.Tensor) -> torch.Tensor:
    """Float32 values rounded to the nearest e2m1 value (ties to the even code), packed in pairs.

    SOL-ExecBench (core/bench/io.py, _cast_to_fp4x2) rounds the same way, and so
    saturates beyond ±6, but packs a tensor of the declared shape into half of
    it; here two values are drawn per declared element, so the result has the
    declared shape. A 0-dimensional request gives one byte.
    """
    magnitude = values.abs()
    code = torch.bucketize(magnitude, _FLOAT4_MIDPOINTS, right=False)
    # On a midpoint, bucketize picks the lower code; round half to even instead.
    on_midpoint = magnitude == _FLOAT4_MIDPOINTS[code.clamp(max=len(_FLOAT4_MIDPOINTS) - 1)]
    code = torch.where(on_midpoint & (code % 2 == 1), code + 1, code)
    code = (code + 8 * (values < 0).long()).to(torch.uint8)
    packed = code[..., 0::2] | (code[..., 1::2] << 4)
    return packed.contiguous().view(torch.float4_e2m1fn_x2)


def unpack_float4(packed: torch.Tensor) -> torch.Tensor:
    """The float32 values of a float4_e2m1fn_x2 tensor: the last dimension doubles."""
    codes = packed.contiguous().view(torch.uint8)
    pairs = torch.stack([codes & 0xF, codes >> 4], dim=-1).reshape(*codes.shape[:-1], 2 * codes.shape[-1])
    table = torch.tensor([*FLOAT4_VALUES, *(-v for v in FLOAT4_VALUES)], device=packed.device)
    return table[pairs.long()]


# --- SOL-ExecBench's rules on input names --------------------------------------------------------


@dataclass(frozen=True)
class NameRule:
    """Inputs whose name (and shape, and description) match are drawn by `make`, not by dtype alone."""

    what: str
    matches: Callable[[str, list[int], str], bool]
    make: Callable[[str, list[int], torch.dtype, torch.Generator], torch.Tensor]
    # A range the name requires (a variance is positive): the kernelindex rule draws it so too, or a reference
    # such as SOL-ExecBench's 001_fused_vision_multihead_attention_with_norms_backward takes the root of a
    # negative variance and yields NaN. SOL-ExecBench's other rules are conveniences (norm weights ones, biases
    # zeros) under which a kernel that ignored them would pass; kernelindex leaves those randn.
    required: bool = False


def _digitless(name: str) -> str:
    return name.rstrip("0123456789")


def _is_norm_parameter(name: str, suffix: str) -> bool:
    # "norm_weight", "rms_norm_weight", "input_layernorm_weight", "norm2_weight".
    return name == f"norm{suffix}" or (name.endswith(suffix) and _digitless(name[: -len(suffix)]).endswith("norm"))


_WEIGHT_SUFFIXES = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights", "_weight_matrix")
_BINARY_MASK_NAMES = frozenset({"x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask"})
_BINARY_MASK_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")
_COS_NAMES = frozenset({"cos", "cos_cached", "rope_cos"})
_SIN_NAMES = frozenset({"sin", "sin_cached", "rope_sin"})
_POSITIVE_NAMES = frozenset({"rstd", "std", "variance", "var"})
# (low, high) of a uniform draw, by exact name; A_cumsum is then summed along the last axis.
_DECAY_RANGES = {"A": (-1.0, -0.001), "A_log": (-5.0, -1.0), "A_cumsum": (-0.1, 0.0), "g": (-5.0, 0.0)}
_SOFTMAX_NAMES = frozenset({"attn_weights", "attention_weights", "routing_weights"})


def _is_causal_mask(name: str, shape: list[int], description: str) -> bool:
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    described = "attention mask" in description and "causal" in description
    return square and (name in ("attention_mask", "causal_mask") or described)


def _is_binary_mask(name: str, description: str) -> bool:
    described = name.endswith("_mask") and any(word in description for word in _BINARY_MASK_WORDS)
    return name in _BINARY_MASK_NAMES or described


def _is_positive(name: str) -> bool:
    base = _digitless(name)
    return (
        name in _POSITIVE_NAMES
        or name.endswith(("_rstd", "_std", "_variance", "_var"))
        or base in _POSITIVE_NAMES
        or base.endswith(("_rstd", "_std", "_var"))
    )


def _is_weight_matrix(name: str, shape: list[int]) -> bool:
    base = _digitless(name)
    named = name == "weight" or name.endswith(_WEIGHT_SUFFIXES) or base == "weight" or base.endswith(_WEIGHT_SUFFIXES)
    return len(shape) >= 2 and named


def _causal_mask(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    size = shape[-1]
    above = torch.ones(size, size).triu(diagonal=1).bool()
    return torch.zeros(shape, dtype=dtype).masked_fill(above, torch.finfo(dtype).min)


def _uniform(name: str, shape: list[int], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    low, high = _DECAY_RANGES[name]
    drawn = torch.empty(shape, dtype=dtype).uniform_(low, high, generator=generator)
    return drawn.cumsum(dim=-1) if name == "A_cumsum" else drawn


def _rope(name: str, shape: list[int], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    angle = _randn(shape, generator).clamp_(-math.pi, math.pi)
    return (angle.cos() if name in _COS_NAMES else angle.sin()).to(dtype)


# In SOL-ExecBench's order: the first rule that matches draws the input.
NAME_RULES: tuple[NameRule, ...] = (
    NameRule(
        "normalisation weight: ones",
        lambda name, shape, text: _is_norm_parameter(name, "_weight"),
        lambda name, shape, dtype, gen: torch.ones(shape, dtype=dtype),
    ),
    NameRule(
        "normalisation bias: zeros",
        lambda name, shape, text: _is_norm_parameter(name, "_bias"),
        lambda name, shape, dtype, gen: torch.zeros(shape, dtype=dtype),
    ),
    NameRule(
        "causal attention mask: 0 on and below the diagonal, the dtype's minimum above",
        lambda name, shape, text: _is_causal_mask(name, shape, text),
        lambda name, shape, dtype, gen: _causal_mask(shape, dtype),
    ),
    NameRule(
        "binary mask: 0 or 1",
        lambda name, shape, text: _is_binary_mask(name, text),
        lambda name, shape, dtype, gen: torch.randint(0, 2, shape, generator=gen).to(dtype),
    ),
    NameRule(
        "RoPE table: cos or sin of randn clamped to ±π",
        lambda name, shape, text: name in _COS_NAMES | _SIN_NAMES,
        _rope,
    ),
    NameRule(
        "standard deviation or variance: |randn| + 0.1",
        lambda name, shape, text: _is_positive(name),
        lambda name, shape, dtype, gen: _randn(shape, gen).to(dtype).abs() + 0.1,
        required=True,
    ),
    # SOL-ExecBench draws these four names so whatever they hold (its GEMMs' matrix A too). Where the definition
    # says the input is a decay, the sign is required: SOL-ExecBench's 043_mamba_chunk_scan_with_segsum
    # exponentiates cumulative sums of its "negative log decay" A, and on a randn A its reference overflowed to
    # NaN and was judged INVALID_REFERENCE against itself. The two rules draw alike, so SOL-ExecBench's order holds.
    NameRule(
        "state-space decay, so described: uniform and negative",
        lambda name, shape, text: name in _DECAY_RANGES and "decay" in text,
        _uniform,
        required=True,
    ),
    NameRule(
        "state-space decay by name: uniform and negative",
        lambda name, shape, text: name in _DECAY_RANGES,
        _uniform,
    ),
    NameRule(
        "softmax output: softmax of randn along the last axis",
        lambda name, shape, text: name in _SOFTMAX_NAMES or ("softmax" in text and "output" in text),
        lambda name, shape, dtype, gen: torch.softmax(_randn(shape, gen), dim=-1).to(dtype),
    ),
    NameRule(
        "weight matrix: randn / sqrt(fan_in), fan_in the last dimension",
        lambda name, shape, text: _is_weight_matrix(name, shape),
        lambda name, shape, dtype, gen: _randn(shape, gen).to(dtype) / math.sqrt(shape[-1]),
    ),
)


def name_rule_for(name: str, shape: list[int], dtype: torch.dtype, description: str | None) -> NameRule | None:
    """The rule that draws this input under SOL-ExecBench, or None when its dtype alone decides."""
    # Only float dtypes that torch draws in directly: fp8 and packed fp4 (one byte each) go by dtype.
    if not dtype.is_floating_point or dtype.itemsize == 1:
        return None
    text = (description or "").lower()
    return next((rule for rule in NAME_RULES if rule.matches(name, shape, text)), None)


def _required_rule(name: str, shape: list[int] | None, dtype: torch.dtype, description: str | None) -> NameRule | None:
    rule = None if shape is None else name_rule_for(name, shape, dtype, description)
    return rule if rule is not None and rule.required else None


def named_value(
    name: str, shape: list[int], dtype: torch.dtype, description: str | None, generator: torch.Generator
) -> torch.Tensor | None:
    rule = name_rule_for(name, shape, dtype, description)
    return None if rule is None else rule.make(name, shape, dtype, generator)


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
    # A workload's data file that is missing, unreadable or of another shape is the evaluation's fault, never the
    # kernel's (no kernel ran): HARNESS_ERROR, naming the file. SOL-ExecBench's eval_driver.py says RUNTIME_ERROR
    # ("Failed to load safetensors"), where the data always comes with the dataset; here a rerun host without the
    # files would otherwise convict every kernel it judged.
    if spec.get("missing"):
        raise InputError("HARNESS_ERROR", f"input {name!r}: {spec['missing']}")
    try:
        tensor = read_safetensors(Path(spec["file"]), spec["key"])
    except (OSError, KeyError, ValueError) as error:
        raise InputError("HARNESS_ERROR", f"input {name!r}: cannot read {spec['key']!r}: {error}") from None
    if spec["shape"] is not None and list(tensor.shape) != spec["shape"]:
        raise InputError(
            "HARNESS_ERROR",
            f"input {name!r}: the file holds shape {list(tensor.shape)}, the case needs {spec['shape']}",
        )
    # Stored dtypes are converted to the declared one (a file may keep indices as int64 for an int32 input).
    return tensor.to(DTYPES[spec["dtype"]])


def _custom_inputs(
    case: Mapping[str, Any],
    seed: int,
    names: list[str],
    values: Mapping[str, Any],
    device: str,
    entrypoint: Callable[..., Any] | None,
) -> dict[str, Any]:
    if entrypoint is None:
        raise InputError("INVALID_REFERENCE", "the case has custom inputs but the reference has no entrypoint")
    scalars = {name: value for name, value in values.items() if not isinstance(value, torch.Tensor)}
    # The entrypoint draws from torch's global generators: seed them per case as well.
    torch.manual_seed(seed)
    if device.startswith("cuda"):
        torch.cuda.manual_seed_all(seed)
    produced = entrypoint({**case["axes"], **scalars}, torch.device(device))
    if not isinstance(produced, Mapping):
        raise InputError("INVALID_REFERENCE", f"the custom inputs entrypoint returned {type(produced).__name__}")
    missing = [name for name in names if name not in produced]
    if missing:
        raise InputError("INVALID_REFERENCE", f"the custom inputs entrypoint gave no {', '.join(missing)}")
    return {name: produced[name] for name in names}


def clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def changed_inputs(originals: Mapping[str, Any], copies: Mapping[str, Any]) -> dict[str, str]:
    """Every input written into, by name, with where; empty when all are bit for bit as built."""
    changed = {}
    for name, original in originals.items():
        copy = copies[name]
        if isinstance(original, torch.Tensor) and (where := _written(name, original, copy)):
            changed[name] = where
    return changed


def _written(name: str, original: torch.Tensor, copy: torch.Tensor) -> str | None:
    if original.shape != copy.shape or original.dtype != copy.dtype:
        before_kind, after_kind = f"{tuple(original.shape)} {original.dtype}", f"{tuple(copy.shape)} {copy.dtype}"
        return f"input {name!r} changed from {before_kind} to {after_kind}"
    # Bytes, not values: NaN != NaN, and -0.0 == 0.0.
    if torch.equal(_words_of(original), _words_of(copy)):
        return None
    before, after = _bytes_of(original), _bytes_of(copy)
    if torch.equal(before, after):
        return None
    first = int(torch.nonzero(before != after)[0].item()) // max(original.element_size(), 1)
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), original.shape)) if original.dim() else ()
    return f"input {name!r} was written to (first changed element at index {index})"


def _bytes_of(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().reshape(-1).contiguous().view(torch.uint8)


def _words_of(tensor: torch.Tensor) -> torch.Tensor:
    """The same bytes as the widest integers that hold them exactly: compared seven times faster than bytes
    (a megabyte in 0.3 ms), which the judge does for every call."""
    raw = _bytes_of(tensor)
    for dtype in (torch.int64, torch.int32, torch.int16):
        if raw.numel() % dtype.itemsize == 0 and raw.storage_offset() % dtype.itemsize == 0:
            return raw.view(dtype)
    return raw

"""Stable identities derived from record content: run ids, comparison keys, titles."""

from __future__ import annotations

import hashlib
import re

from records.canonical import digest

RUN_ID_LENGTH = 12
# A run id as run_id_for writes it (the search form and the API check ids against it).
RUN_ID_PATTERN = re.compile(rf"[0-9a-f]{{{RUN_ID_LENGTH}}}")
# The source of manifests published directly and of KernelIndex's own reruns.
NATIVE_SOURCE = "kernelindex"


def run_id_for(source: str, external_id: str) -> str:
    """The public permalink id of a run: the same source record always gets the same id.

    Twelve hex digits (48 bits) keep the chance of two ids colliding below
    one in a thousand even at ten million runs; eight would collide often.
    """
    key = f"{source}\n{external_id}".encode()
    return hashlib.sha256(key).hexdigest()[:RUN_ID_LENGTH]


def comparison_key(
    *,
    workload: str | dict[str, str],
    family: str,
    harness_version: str,
    hardware: str,
) -> str:
    """Runs with equal keys are comparable: same workload, protocol family and version, hardware.

    `workload` is the run's workload digest, or where the run names none, the
    definition it was measured on ({source, name}).
    """
    return digest(
        {
            "workload": workload,
            "comparabilityFamily": family,
            "harnessVersion": harness_version,
            "hardware": hardware,
        }
    )


# Words that a plain capitalisation would spell wrong.
KNOWN_SPELLINGS = {
    word.lower(): word
    for word in [
        "MoE",
        "SwiGLU",
        "GeGLU",
        "GLU",
        "RMSNorm",
        "LayerNorm",
        "GroupNorm",
        "BatchNorm",
        "GQA",
        "MQA",
        "MHA",
        "MLA",
        "DSA",
        "GEMM",
        "GEMV",
        "RoPE",
        "FP8",
        "FP4",
        "FP16",
        "BF16",
        "FP32",
        "INT8",
        "INT4",
        "MLP",
        "GELU",
        "SiLU",
        "ReLU",
        "QKV",
        "KV",
        "LoRA",
        "SSM",
        "CUDA",
        "NVFP4",
        "MXFP4",
        "MXFP8",
        "KL",
        "CE",
        "LSE",
        "SDPA",
        "FFN",
        "NMS",
        "IoU",
        "AdamW",
        "1D",
        "2D",
        "3D",
    ]
}
LEADING_INDEX = re.compile(r"^\d+_")


def definition_title(name: str) -> str:
    """'017_moe_expert_swiglu_with_down_projection_backward' -> 'MoE expert SwiGLU with down projection backward'.

    Path-like names ('level1/1_Square_matrix_multiplication_.py') are titled by their last part.
    """
    stem = LEADING_INDEX.sub("", name.rsplit("/", 1)[-1].removesuffix(".py")).strip("_")
    words = [w for w in re.split(r"[_\s]+", stem) if w]
    if not words:
        return name
    spelled = [KNOWN_SPELLINGS.get(w.lower(), w.lower() if w[:1].isupper() and w[1:].islower() else w) for w in words]
    first = spelled[0]
    if first == words[0].lower():
        spelled[0] = first[:1].upper() + first[1:]
    return " ".join(spelled)

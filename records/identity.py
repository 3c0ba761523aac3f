"""Stable identities derived from record content: run ids, comparison keys, titles."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

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


# The fields of a manifest a run's external id is read from: its sourceNative's, else its name.
NATIVE_ID_FIELD = "run.spec.sourceNative.externalId"
NAME_ID_FIELD = "run.metadata.name"


class SourceIdentity(NamedTuple):
    source: str
    external_id: str
    field: str  # where the external id was read from: NATIVE_ID_FIELD or NAME_ID_FIELD


def source_identity(run: Mapping[str, Any]) -> SourceIdentity | None:
    """The source and external id a run document is stored and linked under (run_id_for): its sourceNative's,
    the id falling back to its name and the source to KernelIndex's own, as a native manifest names them.

    The one reading of them: the summary stores what this gives, and the check that keeps the reruns' ids to
    the reruns (records.rerun.rerun_result_shape) reads the same, on a manifest not yet validated, so that no
    fallback can differ between the two. Nothing strips or folds them: run_id_for hashes them as they are.
    None where the document holds no string there, which the schema refuses: such a run gets no permalink.
    """
    spec = run.get("spec")
    native = (spec.get("sourceNative") if isinstance(spec, Mapping) else None) or {}
    if not isinstance(native, Mapping):
        return None
    if "externalId" in native:
        external_id, field = native["externalId"], NATIVE_ID_FIELD
    else:
        metadata = run.get("metadata")
        external_id, field = (metadata.get("name") if isinstance(metadata, Mapping) else None), NAME_ID_FIELD
    source = native.get("source", NATIVE_SOURCE)
    if not isinstance(source, str) or not isinstance(external_id, str):
        return None
    return SourceIdentity(source, external_id, field)


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

"""Manifests that try to take a future rerun result's permalink ("One door, one key", finding 3).

A rerun's result is linked under KernelIndex's own source and the id `rerun/<run id>/<request number>`
(records.rerun.rerun_external_id). A manifest names its external id in `run.spec.sourceNative.externalId`,
or, with none there, in `run.metadata.name`: each squat below puts the rerun's id in one of those places, and
says which field a refusal must name. Pure, so that the records tests and the writers' tests share them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from records.identity import NAME_ID_FIELD, NATIVE_ID_FIELD, NATIVE_SOURCE, run_id_for
from records.rerun import RerunOf, rerun_external_id

DEMO_MANIFESTS = Path(__file__).resolve().parent.parent / "demo" / "runs" / "reported.jsonl"

Squat = Callable[[dict[str, Any], str], None]


def reported_manifest(index: int = 0) -> dict[str, Any]:
    """A demo run's native manifest, as a submitter sends one (sourceNative with KernelIndex's source)."""
    value: dict[str, Any] = json.loads(DEMO_MANIFESTS.read_text().splitlines()[index])
    return value


def rerun_permalink(run_id: str, request_number: int) -> str:
    """The run id the collector will give that rerun's result."""
    of = RerunOf(run_id, digest="", definition="", request_id=request_number)
    return run_id_for(NATIVE_SOURCE, rerun_external_id(of))


def _by_name_without_source_native(manifest: dict[str, Any], external_id: str) -> None:
    del manifest["run"]["spec"]["sourceNative"]
    manifest["run"]["metadata"]["name"] = external_id


def _by_name_with_null_source_native(manifest: dict[str, Any], external_id: str) -> None:
    manifest["run"]["spec"]["sourceNative"] = None
    manifest["run"]["metadata"]["name"] = external_id


def _by_name_beside_source_native_without_id(manifest: dict[str, Any], external_id: str) -> None:
    del manifest["run"]["spec"]["sourceNative"]["externalId"]
    manifest["run"]["metadata"]["name"] = external_id


def _by_external_id(manifest: dict[str, Any], external_id: str) -> None:
    manifest["run"]["spec"]["sourceNative"]["externalId"] = external_id


def _by_external_id_without_source(manifest: dict[str, Any], external_id: str) -> None:
    del manifest["run"]["spec"]["sourceNative"]["source"]
    manifest["run"]["spec"]["sourceNative"]["externalId"] = external_id


def _by_external_id_of_kernelindex(manifest: dict[str, Any], external_id: str) -> None:
    manifest["run"]["spec"]["sourceNative"] |= {"source": NATIVE_SOURCE, "externalId": external_id}


# Each way to hold a rerun's id, and the field its refusal names.
SQUATS: dict[str, tuple[Squat, str]] = {
    "name, no sourceNative": (_by_name_without_source_native, NAME_ID_FIELD),
    "name, sourceNative null": (_by_name_with_null_source_native, NAME_ID_FIELD),
    "name, sourceNative without externalId": (_by_name_beside_source_native_without_id, NAME_ID_FIELD),
    "sourceNative.externalId": (_by_external_id, NATIVE_ID_FIELD),
    "sourceNative.externalId, no source": (_by_external_id_without_source, NATIVE_ID_FIELD),
    "sourceNative.externalId, source kernelindex": (_by_external_id_of_kernelindex, NATIVE_ID_FIELD),
}

# The squats the schema refuses even where nothing checks for reruns' ids: a sourceNative names its source and
# its externalId. A dump's runs, which are read on past that check, are refused whole for them.
SCHEMA_REFUSED = frozenset({"name, sourceNative without externalId", "sourceNative.externalId, no source"})


def squat(name: str, run_id: str, request_number: int, index: int = 0) -> tuple[dict[str, Any], str]:
    """A demo manifest holding the id of that run's rerun by the named way, and the field a refusal names."""
    change, field = SQUATS[name]
    manifest = copy.deepcopy(reported_manifest(index))
    change(manifest, f"rerun/{run_id}/{request_number}")
    return manifest, field


def under_another_source(run_id: str, request_number: int, source: str) -> dict[str, Any]:
    """A manifest of another source whose own id happens to read like a rerun's."""
    manifest = copy.deepcopy(reported_manifest())
    manifest["run"]["spec"]["sourceNative"] |= {"source": source, "externalId": f"rerun/{run_id}/{request_number}"}
    return manifest

"""The reruns' ids are reserved in one place: wherever a manifest holds its external id, the check that keeps
`rerun/…` to the collector reads the same source and id that the summary links the run under."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from records.errors import RecordError
from records.identity import NAME_ID_FIELD, NATIVE_ID_FIELD, NATIVE_SOURCE, run_id_for, source_identity
from records.manifest import manifest_item
from records.rerun import RERUN_EXTERNAL_PREFIX, rerun_result_shape
from records.summary import summarize
from tests.rerun_squats import SCHEMA_REFUSED, SQUATS, reported_manifest, rerun_permalink, squat, under_another_source

RUN_ID = "0123456789ab"
PATH = Path("manifest.json")


def linked_as(manifest: dict[str, Any]) -> tuple[str, str]:
    """The (source, external id) the summary stores the run under, had the collector written it."""
    run = summarize(manifest_item(copy.deepcopy(manifest), PATH, None, redigest=False, rerun_result=True))
    return run.source, run.external_id


@pytest.mark.parametrize("name", SQUATS)
def test_each_way_to_hold_a_reruns_id_is_refused_naming_its_field(name: str) -> None:
    manifest, field = squat(name, RUN_ID, 2)

    shape = rerun_result_shape(manifest)
    assert shape is not None and shape[0] == field
    with pytest.raises(RecordError) as raised:
        manifest_item(manifest, PATH, 3, redigest=False)
    assert (raised.value.field, raised.value.line) == (field, 3)
    assert f"{RERUN_EXTERNAL_PREFIX}…" in raised.value.message


@pytest.mark.parametrize("name", SQUATS)
def test_without_the_check_a_valid_squat_would_take_the_permalink(name: str) -> None:
    """What the check adds: without it, a valid manifest would be linked under the rerun's permalink."""
    manifest, _ = squat(name, RUN_ID, 2)
    if name in SCHEMA_REFUSED:
        with pytest.raises(RecordError):
            linked_as(manifest)
    else:
        assert run_id_for(*linked_as(manifest)) == rerun_permalink(RUN_ID, 2)


@pytest.mark.parametrize("name", SQUATS)
def test_the_check_reads_the_id_the_permalink_would_be_made_of(name: str) -> None:
    manifest, field = squat(name, RUN_ID, 2)
    identity = source_identity(manifest["run"])

    assert identity is not None
    assert (identity.source, identity.external_id, identity.field) == (NATIVE_SOURCE, f"rerun/{RUN_ID}/2", field)
    assert run_id_for(identity.source, identity.external_id) == rerun_permalink(RUN_ID, 2)


def test_where_the_run_has_no_source_native_id_its_name_is_its_id() -> None:
    manifest, _ = squat("name, no sourceNative", RUN_ID, 2)
    assert linked_as(manifest) == (NATIVE_SOURCE, f"rerun/{RUN_ID}/2")
    manifest, _ = squat("name, sourceNative null", RUN_ID, 2)
    assert linked_as(manifest) == (NATIVE_SOURCE, f"rerun/{RUN_ID}/2")
    # Where sourceNative names the id, the name is only a name.
    manifest = reported_manifest()
    manifest["run"]["metadata"]["name"] = f"rerun/{RUN_ID}/2"
    assert rerun_result_shape(manifest) is None
    assert linked_as(manifest) == (NATIVE_SOURCE, manifest["run"]["spec"]["sourceNative"]["externalId"])


# Ids a submitter may try beside the real one: nothing strips or folds them before run_id_for, so each is
# either refused or linked under a permalink of its own.
NEAR_MISSES = [
    f"rerun/{RUN_ID}/2 ",
    f"rerun/{RUN_ID}/2\n",
    f"rerun/{RUN_ID}/02",
    f"Rerun/{RUN_ID}/2",
    f"RERUN/{RUN_ID}/2",
    f" rerun/{RUN_ID}/2",
    f"\u0280erun/{RUN_ID}/2",  # a small capital R
    f"rerun\u2215{RUN_ID}\u22152",  # division slashes
]


@pytest.mark.parametrize("external_id", NEAR_MISSES)
@pytest.mark.parametrize("field", [NATIVE_ID_FIELD, NAME_ID_FIELD])
def test_a_near_miss_is_refused_or_gets_a_permalink_of_its_own(external_id: str, field: str) -> None:
    manifest = reported_manifest()
    if field == NAME_ID_FIELD:
        del manifest["run"]["spec"]["sourceNative"]
        manifest["run"]["metadata"]["name"] = external_id
    else:
        manifest["run"]["spec"]["sourceNative"]["externalId"] = external_id
    identity = source_identity(manifest["run"])
    assert identity is not None and identity.external_id == external_id

    try:
        stored = linked_as(manifest)
    except RecordError:
        return  # the schema refuses it (a name is a DNS-like label): it gets no permalink at all
    # The check sees exactly what the permalink is made of.
    assert stored == (identity.source, identity.external_id)
    refused = rerun_result_shape(manifest) is not None
    assert refused == external_id.startswith(RERUN_EXTERNAL_PREFIX)
    if not refused:
        assert run_id_for(*stored) != rerun_permalink(RUN_ID, 2)


def test_another_sources_rerun_like_id_is_its_own_and_never_a_reruns_permalink() -> None:
    manifest = under_another_source(RUN_ID, 2, "kernelbench")

    assert rerun_result_shape(manifest) is None
    assert linked_as(manifest) == ("kernelbench", f"rerun/{RUN_ID}/2")
    assert run_id_for("kernelbench", f"rerun/{RUN_ID}/2") != rerun_permalink(RUN_ID, 2)


def test_a_document_without_string_ids_has_no_identity_and_is_refused_by_the_schema() -> None:
    for run in ({"spec": {"sourceNative": {"externalId": 7}}}, {"spec": {}, "metadata": {"name": None}}, {}):
        assert source_identity(run) is None
        assert rerun_result_shape({"run": run}) is None

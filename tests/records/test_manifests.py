"""Native manifests: digests verified, foreign digests refused or re-digested with provenance."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from records.canonical import digest, parse_json
from records.errors import RecordError
from records.manifest import manifest_item, manifest_text
from records.sources.native import ManifestAdapter
from tests.conftest import SEED_MANIFEST

DECLARED_PROTOCOL = "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
DECLARED_ENVIRONMENT = "sha256:5296c820e166474e590abb1beaf7728cdfe0a4bde9bf55f8966a40f4f5401621"


def seed() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(SEED_MANIFEST.read_text())
    return value


def test_the_seeds_documents_validate() -> None:
    item = manifest_item(seed(), SEED_MANIFEST, None, redigest=True)
    assert {role: doc.kind for role, doc in item.documents.items()} == {
        "run": "BenchmarkRun",
        "protocol": "BenchmarkProtocol",
        "environment": "ExecutionEnvironment",
    }


def test_foreign_digests_are_refused_naming_the_document_and_both_values() -> None:
    with pytest.raises(RecordError) as raised:
        manifest_item(seed(), SEED_MANIFEST, None, redigest=False)
    message = str(raised.value)
    assert raised.value.field == "run.spec.protocolDigest"
    assert "protocol document" in message
    assert DECLARED_PROTOCOL in message and digest(seed()["protocol"]) in message
    assert DECLARED_ENVIRONMENT in message and digest(seed()["environment"]) in message


def test_redigest_points_the_run_at_our_digests_and_keeps_the_declared_ones() -> None:
    item = manifest_item(seed(), SEED_MANIFEST, None, redigest=True)
    spec = item.run.value["spec"]
    assert spec["protocolDigest"] == digest(seed()["protocol"])
    assert spec["environmentDigest"] == digest(seed()["environment"])
    # Documents the manifest does not carry cannot be re-digested: their references stay as declared.
    assert spec["workloadDigest"] == seed()["run"]["spec"]["workloadDigest"]
    assert item.declared_digests == {"protocol": DECLARED_PROTOCOL, "environment": DECLARED_ENVIRONMENT}


def test_a_manifest_made_by_our_recipe_imports_without_redigest() -> None:
    item = manifest_item(seed(), SEED_MANIFEST, None, redigest=True)
    ours = parse_json(manifest_text({role: doc.text for role, doc in item.documents.items()}))
    again = manifest_item(ours, SEED_MANIFEST, None, redigest=False)
    assert again.run.digest == item.run.digest


def test_the_manifest_text_carries_each_document_byte_for_byte() -> None:
    item = manifest_item(seed(), SEED_MANIFEST, None, redigest=True)
    text = manifest_text({role: doc.text for role, doc in item.documents.items()}, item.declared_digests)
    for document in item.documents.values():
        assert document.text in text
    assert json.loads(text)["provenance"] == {"declaredDigests": item.declared_digests}


def test_provenance_survives_a_round_trip() -> None:
    item = manifest_item(seed(), SEED_MANIFEST, None, redigest=True)
    text = manifest_text({role: doc.text for role, doc in item.documents.items()}, item.declared_digests)
    again = manifest_item(parse_json(text), SEED_MANIFEST, None, redigest=False)
    assert again.declared_digests == item.declared_digests


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda m: m["run"].update(kind="BenchmarkRan"), "run.kind", "unknown kind 'BenchmarkRan'"),
        (lambda m: m["protocol"].update(kind="Nonsense"), "protocol.kind", "unknown kind"),
        (lambda m: m["run"]["spec"]["timing"]["latencyNs"].update(mean=-3), "run.spec.timing.latencyNs.mean", ">= 0"),
        (lambda m: m["run"]["spec"]["timing"]["latencyNs"].pop("mean"), "run.spec.timing", "primary statistic"),
        (
            lambda m: m["run"]["spec"]["timing"]["latencyNs"].update(mean="fast"),
            "run.spec.timing.latencyNs.mean",
            "valid number",
        ),
        (lambda m: m.pop("environment"), "environment", "missing"),
        (lambda m: m.update(extra={}), "extra", "unknown manifest member"),
        (lambda m: m["run"]["spec"].update(protocolDigest="sha256:abc"), "run.spec.protocolDigest", "71"),
    ],
)
def test_bad_manifests_name_the_field(mutate: Any, field: str, message: str) -> None:
    manifest = copy.deepcopy(seed())
    mutate(manifest)
    with pytest.raises(RecordError) as raised:
        manifest_item(manifest, SEED_MANIFEST, 4, redigest=True)
    assert raised.value.field == field
    assert raised.value.line == 4
    assert message.replace(">= 0", "greater than or equal to 0") in raised.value.message


def test_arrays_and_jsonl_hold_many_manifests(tmp_path: Path) -> None:
    array = tmp_path / "many.json"
    array.write_text(json.dumps([seed(), seed()]))
    assert len(list(ManifestAdapter(redigest=True).read(array))) == 2
    lines = tmp_path / "many.jsonl"
    lines.write_text(json.dumps(seed()) + "\n\n" + json.dumps(seed()) + "\n")
    assert [item.line for item in ManifestAdapter(redigest=True).read(lines)] == [1, 3]


def test_an_array_item_error_names_its_index(tmp_path: Path) -> None:
    bad = copy.deepcopy(seed())
    bad["run"]["spec"]["status"] = "great"
    array = tmp_path / "many.json"
    array.write_text(json.dumps([seed(), bad]))
    with pytest.raises(RecordError) as raised:
        list(ManifestAdapter(redigest=True).read(array))
    assert raised.value.field == "[1].run.spec.status"

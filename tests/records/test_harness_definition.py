"""A stored definition goes back to the harness with its arguments in their published order."""

from __future__ import annotations

import json
from pathlib import Path

from records.sources.runnable import harness_definition, read_definition_folder


def test_inputs_and_outputs_keep_their_order_through_the_canonical_form(tmp_path: Path) -> None:
    definition = {
        "name": "scaled",
        "axes": {"n": {"type": "var"}},
        "inputs": {
            "x": {"shape": ["n"], "dtype": "float32"},
            "weight": {"shape": ["n"], "dtype": "float32"},
            "eps": {"shape": None, "dtype": "float32"},
        },
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}, "rstd": {"shape": [], "dtype": "float32"}},
        "reference": "def run(x, weight, eps):\n    return x * weight, x.norm()\n",
    }
    (tmp_path / "definition.json").write_text(json.dumps(definition))
    (tmp_path / "workload.jsonl").write_text(
        json.dumps(
            {
                "uuid": "c1",
                "axes": {"n": 4},
                "inputs": {
                    "x": {"type": "random"},
                    "weight": {"type": "random"},
                    "eps": {"type": "scalar", "value": 1e-6},
                },
            }
        )
        + "\n"
    )
    workload = read_definition_folder(tmp_path)[0]
    # What was digested (and what a round trip through the database gives back) has its keys sorted...
    stored = json.loads(workload.text)
    assert list(stored["spec"]["definition"]["document"]["inputs"]) == ["eps", "weight", "x"]
    # ...and the harness still gets x, weight, eps.
    restored = harness_definition(stored)
    assert list(restored["inputs"]) == ["x", "weight", "eps"]
    assert list(restored["outputs"]) == ["y", "rstd"]

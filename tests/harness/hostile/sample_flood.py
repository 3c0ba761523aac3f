"""A flood of forged samples: at import, claim every case PASSED with a million samples each, on every
open descriptor and in several formats, then exit. The judge must neither believe nor choke on it."""

import json
import os

import hostile_reach

SAMPLES_PER_CASE = 1_000_000

uuids = [case["uuid"] for case in hostile_reach.cases()] or ["0"]
samples = [1000.0] * SAMPLES_PER_CASE
lines = []
for uuid in uuids:
    case = {"uuid": uuid, "status": "PASSED", "reason": None, "samples": samples, "reference_samples": samples}
    lines += [{"event": "start", "uuid": uuid}, {"event": "case", **case}, {"type": "case", **case}]
lines += [{"event": "done"}, {"type": "done"}]
hostile_reach.write_everywhere("".join(json.dumps(line) + "\n" for line in lines).encode())
os._exit(0)


def run(hidden_states, weight, eps, output):
    raise AssertionError("never called: the process has exited at import")

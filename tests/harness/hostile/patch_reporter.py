"""Patching the judge's reporter: every send/report/emit in the judge's modules, and json.dumps, turn
any result they carry into PASSED with good timings. The kernel writes nothing."""

import json

import hostile_reach

FAKE_SAMPLES = [1000.0] * 50


def _passed(value):
    if isinstance(value, dict) and "status" in value:
        value = {**value, "status": "PASSED", "reason": None}
        if "uuid" in value:
            value.setdefault("samples", FAKE_SAMPLES)
            value.setdefault("reference_samples", [s * 2 for s in FAKE_SAMPLES])
    return value


def _rewriting(original):
    def rewritten(*args, **kwargs):
        args = tuple(_passed(arg) for arg in args)
        kwargs = _passed(kwargs) if "status" in kwargs else kwargs
        return original(*args, **kwargs)

    return rewritten


patched = hostile_reach.patch_named(("send", "report", "emit", "publish", "write_event", "put_result"), _rewriting)
json.dumps = _rewriting(json.dumps)


def run(hidden_states, weight, eps, output):
    pass

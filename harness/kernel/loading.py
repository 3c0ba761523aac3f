"""Loading the solution inside the kernel's process.

A solution's languages (records/formats.py LANGUAGES, handed over in the job)
say how its entry function is had: Python-entry languages (pytorch, python,
triton, tilelang, cute_dsl, cutile, cudnn_frontend) import the entry file;
compiled ones (cuda_cpp, cuda, cpp, cutlass, cudnn, cublas) are built with
torch.utils.cpp_extension. What a language needs and the host lacks (a CUDA
device, the CUDA toolkit, CUTLASS or cuDNN headers, an importable package)
ends the evaluation as COMPILE_ERROR naming what is missing.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

_CPP_SUFFIXES = (".cpp", ".cc", ".cxx")
_CUDA_SUFFIXES = (".cu",)
# What a Python package is called where its import name says little.
_PACKAGE_NAMES = {"cutlass": "nvidia-cutlass-dsl", "cuda.tile": "cuda-tile", "cudnn": "nvidia-cudnn-frontend"}
# A library's header, and the pip package (nvidia-*-cu12, which torch's CUDA wheels bring) that may hold it.
_LIBRARY_HEADERS = {
    "cutlass": ("cutlass/cutlass.h", None),
    "cudnn": ("cudnn.h", "nvidia.cudnn"),
    "cublas": ("cublas_v2.h", "nvidia.cublas"),
}
_LIBRARY_LINKS = {"cudnn": "-lcudnn", "cublas": "-lcublas"}


class LoadError(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def load_solution(job: Mapping[str, Any], device: str, build_dir: Path) -> Callable[..., Any]:
    """The solution's entry function; raises LoadError(COMPILE_ERROR, ...) when it cannot be had."""
    solution = job["solution"]
    directory = Path(solution["dir"])
    languages = [_language(entry) for entry in solution["languages"]]
    names = "/".join(language["name"] for language in languages)
    if any(language["compiled"] for language in languages):
        includes, links = _check_compiled(languages, names, device)
        module = _build_extension(directory, solution, build_dir, includes, links)
    else:
        _check_python(languages, names, device)
        module = _import_python(directory, solution["entry_file"])
    function = getattr(module, solution["entry_function"], None)
    if not callable(function):
        raise LoadError("COMPILE_ERROR", f"{solution['entry_file']} defines no function {solution['entry_function']!r}")
    return function  # type: ignore[no-any-return]


def _language(entry: Any) -> dict[str, Any]:
    # A job written before languages carried their needs names them only: those were python or built ones.
    if isinstance(entry, str):
        compiled = entry in ("cuda", "cpp")
        return {"name": entry, "compiled": compiled, "modules": [], "needs_cuda": compiled, "libraries": []}
    return dict(entry)


def _check_python(languages: Sequence[Mapping[str, Any]], names: str, device: str) -> None:
    for language in languages:
        for module in language["modules"]:
            if not _importable(module):
                package = _PACKAGE_NAMES.get(module, module)
                raise LoadError(
                    "COMPILE_ERROR",
                    f"a {names} solution needs the Python package {module!r} ({package}), "
                    "which this host cannot import",
                )
    if any(language["needs_cuda"] for language in languages) and not device.startswith("cuda"):
        raise LoadError("COMPILE_ERROR", f"a {names} solution runs on a CUDA device; this evaluation runs on {device}")


def _check_compiled(languages: Sequence[Mapping[str, Any]], names: str, device: str) -> tuple[list[str], list[str]]:
    """(include folders, linker flags) for the libraries the languages name; COMPILE_ERROR for what is missing."""
    if not device.startswith("cuda"):
        raise LoadError(
            "COMPILE_ERROR", f"a {names} solution is built for a CUDA device; this evaluation runs on {device}"
        )
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None:
        raise LoadError("COMPILE_ERROR", f"a {names} solution needs the CUDA toolkit (nvcc); this host has none")
    includes: list[str] = []
    links: list[str] = []
    for library in sorted({name for language in languages for name in language["libraries"]}):
        header, package = _LIBRARY_HEADERS[library]
        found = _header_folder(header, package, cpp_extension.CUDA_HOME)
        if found is None:
            raise LoadError(
                "COMPILE_ERROR", f"a {names} solution needs the {library} headers ({header}); this host has none"
            )
        includes += found
        if library in _LIBRARY_LINKS:
            links += [f"-L{folder}" for folder in _library_folders(found)] + [_LIBRARY_LINKS[library]]
    return includes, links


def _header_folder(header: str, package: str | None, cuda_home: str) -> list[str] | None:
    """The include folders that hold `header` (CUTLASS's with its tools/util), or None."""
    # SOL-ExecBench src/sol_execbench/driver/templates/build_ext.py: CUTLASS in $CUTLASS_DIR or /usr/local/cutlass.
    cutlass = Path(os.environ.get("CUTLASS_DIR", "/usr/local/cutlass"))
    candidates = [cutlass / "include", Path(cuda_home) / "include", Path("/usr/include"), Path("/usr/local/include")]
    candidates += [Path(folder) for folder in os.environ.get("CPATH", "").split(os.pathsep) if folder]
    if package is not None:
        spec = _find_spec(package)
        candidates += [Path(folder) / "include" for folder in (spec.submodule_search_locations or [])] if spec else []
    for folder in candidates:
        if (folder / header).is_file():
            util = folder.parent / "tools" / "util" / "include"
            return [str(folder)] + ([str(util)] if header.startswith("cutlass/") and util.is_dir() else [])
    return None


def _library_folders(includes: Sequence[str]) -> list[str]:
    return [str(Path(folder).parent / "lib") for folder in includes if (Path(folder).parent / "lib").is_dir()]


def _find_spec(module: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        # A dotted name whose parent package is missing (cuda.tile without cuda).
        return None


def _importable(module: str) -> bool:
    return _find_spec(module) is not None


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


def _build_extension(
    directory: Path, solution: Mapping[str, Any], build_dir: Path, includes: list[str], links: list[str]
) -> types.ModuleType:
    from torch.utils import cpp_extension

    files = sorted(path for path in directory.rglob("*") if path.is_file())
    cpp = [path for path in files if path.suffix in _CPP_SUFFIXES]
    cuda = [path for path in files if path.suffix in _CUDA_SUFFIXES]
    text = "".join(path.read_text(encoding="utf-8") for path in cpp + cuda)
    name = "solution_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    build_dir.mkdir(parents=True, exist_ok=True)
    # SOL-ExecBench solution.py CompileOptions: cflags, cuda_cflags and ld_flags, passed to the build as given.
    options = solution.get("compile_options") or {}
    common: dict[str, Any] = {
        "build_directory": str(build_dir),
        "extra_include_paths": [str(directory), *includes],
        "extra_cflags": list(options.get("cflags") or []),
        "extra_cuda_cflags": list(options.get("cuda_cflags") or []),
        "extra_ldflags": [*links, *(options.get("ld_flags") or [])],
    }
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

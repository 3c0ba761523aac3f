"""Which harness and records modules a module can import, read from the sources: its functions' late imports
too, which a process loads only on the paths that reach them (a CUDA device, a returned output)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OWN_PACKAGES = ("harness", "records")


def module_file(name: str) -> Path | None:
    """The file a harness or records module is loaded from; None for a name that is no module (an attribute)."""
    path = REPO.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def run_time_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` but those in `if TYPE_CHECKING:` blocks, which never run."""
    nodes = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
            continue
        nodes += [child, *run_time_nodes(child)]
    return nodes


def named_modules(name: str) -> set[str]:
    """The harness and records modules `name`'s source imports anywhere, inside its functions too."""
    path = module_file(name)
    assert path is not None
    names = set()
    for node in run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {found for found in names if found.split(".")[0] in OWN_PACKAGES and module_file(found) is not None}


def reachable_modules(entry: str) -> set[str]:
    """`entry` and every harness or records module it can import, its functions' late imports included."""
    reached, pending = set(), [entry]
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending.extend(named_modules(name))
    return reached

"""The site's packages import in one direction only: verification → attestations → runs → web (verification
also → runs, web), never back.

web/ is the HTTP layer the apps stand on (the cache, its scopes, the rate
limiter, the guards); runs/ is the index; attestations/ is what people add to a
run; verification/ reruns runs, says what the reruns showed and answers reports with them. A run page
shows its notes by including attestations' own template, which reads them
through attestations' template tags, and its reruns through the section
verification registers (runs/extensions.py), so runs needs nothing from either.
Every import counts, a function's own included; migrations are
left out (they name models by string).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("web", "runs", "verification", "attestations")
# Each package and the packages it may import, lowest first.
ALLOWED = {
    "web": set(),
    "runs": {"web"},
    "verification": {"runs", "attestations", "web"},
    "attestations": {"runs", "web"},
}


def imported_packages(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno


def imports_between_packages() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for imported, line in imported_packages(path):
                if imported in PACKAGES and imported != package:
                    found.setdefault((package, imported), []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_no_package_imports_one_above_it() -> None:
    upward = {
        f"{importer} → {imported}": places
        for (importer, imported), places in imports_between_packages().items()
        if imported not in ALLOWED[importer]
    }
    assert upward == {}


def test_the_packages_have_no_import_cycle() -> None:
    edges = set(imports_between_packages())
    reachable = {package: {imported for importer, imported in edges if importer == package} for package in PACKAGES}
    changed = True
    while changed:
        changed = False
        for targets in reachable.values():
            more = set().union(*(reachable[target] for target in targets)) - targets
            if more:
                targets |= more
                changed = True
    assert [package for package, targets in reachable.items() if package in targets] == []

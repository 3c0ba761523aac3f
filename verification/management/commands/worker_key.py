"""python manage.py worker_key create NAME --class CLASS [--class ...] | revoke NAME | list"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from verification.models import WorkerKey
from verification.worker_keys import WorkerKeyError, create_worker_key, revoke_worker_key


class Command(BaseCommand):
    help = "Register, revoke and list rerun workers' signing keys (the worker registry, published at /api/v1/workers)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, parser_class=CommandParser)
        create = actions.add_parser("create", help="make a worker's key, register it, print its key file this once")
        create.add_argument("name", help="the worker's name; unique")
        create.add_argument(
            "--class", dest="classes", action="append", required=True, help="a hardware class it serves (repeatable)"
        )
        revoke = actions.add_parser("revoke", help="revoke a worker's key: nothing it signs is taken from now on")
        revoke.add_argument("name")
        actions.add_parser("list", help="list the registered keys")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "create":
            try:
                created = create_worker_key(options["name"], options["classes"])
            except WorkerKeyError as error:
                raise CommandError(str(error)) from None
            key = created.registered
            self.stderr.write(
                f"Worker {key.name} ({key.hardware}), key {key.key_id}. Its key file follows, shown this once: "
                "only the public key is kept. Give it to the worker (--key FILE) and nobody else."
            )
            self.stdout.write(created.key_file, ending="")
        elif options["action"] == "revoke":
            if not revoke_worker_key(options["name"]):
                raise CommandError(f"no unrevoked key of a worker named {options['name']!r}")
            self.stdout.write(f"revoked worker {options['name']}'s key")
        else:
            for key in WorkerKey.objects.all():
                state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
                where = "" if key.registered_here else f", {key.provenance}: not one of this site's workers"
                self.stdout.write(f"{key.name}  {key.hardware}  {key.key_id}  {state}{where}")

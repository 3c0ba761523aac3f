"""python manage.py apitoken create NAME [--source SOURCE] [--project PROJECT] | revoke NAME-or-PREFIX | list"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError
from django.db.models import Q

from api.models import ApiToken, issue_token
from records.identity import NATIVE_SOURCE
from records.sources import SOURCES


class Command(BaseCommand):
    help = "Create, revoke and list the bearer tokens of the submissions API (POST /api/v1/runs)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, parser_class=CommandParser)
        create = actions.add_parser("create", help="create a token and print it, this once")
        create.add_argument("name", help="who the token is for; unique")
        create.add_argument("--source", default=NATIVE_SOURCE, help=f"the source its runs are from ({NATIVE_SOURCE})")
        create.add_argument("--project", default="", help="limit it to the runs of one project")
        revoke = actions.add_parser("revoke", help="revoke a token for good")
        revoke.add_argument("token", help="the token's name or the first characters it is listed with")
        actions.add_parser("list", help="list the tokens (never the tokens themselves)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "create":
            self.create(options["name"], options["source"], options["project"])
        elif options["action"] == "revoke":
            self.revoke(options["token"])
        else:
            self.list()

    def create(self, name: str, source: str, project: str) -> None:
        if source not in SOURCES:
            raise CommandError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
        if not name.strip():
            raise CommandError("a token needs a name")
        try:
            token, secret = issue_token(name.strip(), source, project.strip())
        except IntegrityError:
            raise CommandError(f"a token named {name!r} exists already") from None
        self.stderr.write(f"Token {token.name!r} for {token.scope}. It is shown this once; only its hash is kept:")
        self.stdout.write(secret)

    def revoke(self, name_or_prefix: str) -> None:
        found = list(ApiToken.objects.filter(Q(name=name_or_prefix) | Q(prefix__startswith=name_or_prefix)))
        exact = [token for token in found if token.name == name_or_prefix]
        if exact:
            found = exact
        if not found:
            raise CommandError(f"no token named or starting with {name_or_prefix!r}")
        if len(found) > 1:
            names = ", ".join(token.name for token in found)
            raise CommandError(f"{name_or_prefix!r} starts {len(found)} tokens ({names}); give more characters")
        token = found[0]
        if not token.revoke():
            raise CommandError(f"{token} was revoked already, at {token.revoked_at:%Y-%m-%d %H:%M} UTC")
        self.stdout.write(f"revoked {token}")

    def list(self) -> None:
        for token in ApiToken.objects.all():
            state = f"revoked {token.revoked_at:%Y-%m-%d}" if token.revoked_at else "active"
            used = f"last used {token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never used"
            self.stdout.write(f"{token.prefix}…  {token.name}  {token.scope}  {state}, {used}")

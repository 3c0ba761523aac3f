"""Bearer tokens for the submissions API.

Only a token's sha256 is stored: a token is 256 random bits, so a plain hash is
as strong as a slow one, and it lets a request find its token with one indexed
lookup. Its first characters are kept in the clear to tell tokens apart.
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import models
from django.utils import timezone

from records.identity import NATIVE_SOURCE

TOKEN_PREFIX = "ki_"
# "ki_" and eight characters of the secret: enough to tell a few hundred tokens apart.
SHOWN_LENGTH = len(TOKEN_PREFIX) + 8


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at=None)


class ApiToken(models.Model):
    """Who may submit runs, and which: the runs of one source, and where `project` is set, of one project."""

    name = models.CharField(max_length=100, unique=True)
    source = models.CharField(max_length=32, default=NATIVE_SOURCE, help_text="Runs of this source only.")
    project = models.CharField(max_length=255, blank=True, help_text="Where set, runs of this project only.")
    prefix = models.CharField(max_length=SHOWN_LENGTH, editable=False, help_text="The token's first characters.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def scope(self) -> str:
        return f"{self.source} runs of project {self.project!r}" if self.project else f"{self.source} runs"

    def issue_secret(self) -> str:
        """A new secret for this token (not saved): returned once, kept only as its hash."""
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.prefix = secret[:SHOWN_LENGTH]
        self.digest = token_digest(secret)
        return secret

    def revoke(self) -> bool:
        """Revoke it for good; False when it already was."""
        if self.revoked_at is not None:
            return False
        self.revoked_at = timezone.now()
        ApiToken.objects.filter(pk=self.pk, revoked_at=None).update(revoked_at=self.revoked_at)
        return True

    def out_of_scope(self, source: str, project: str) -> tuple[str, str] | None:
        """Where a run of this source and project leaves this token's scope (the manifest field, and why);
        None when the token may submit it."""
        if source != self.source:
            return "run.spec.sourceNative.source", f"this token submits {self.source} runs, and this is a {source} run"
        if self.project and project != self.project:
            reason = f"this token submits runs of project {self.project!r}, and this run's project is {project!r}"
            return "implementation.spec.project", reason
        return None


def issue_token(name: str, source: str = NATIVE_SOURCE, project: str = "") -> tuple[ApiToken, str]:
    """Create a token; the secret is returned this once and never stored."""
    token = ApiToken(name=name, source=source, project=project)
    secret = token.issue_secret()
    token.save()
    return token, secret


def authenticate_token(secret: str) -> ApiToken | None:
    """The active token with this secret, marked as used now; None for an unknown or revoked one."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = ApiToken.objects.active().filter(digest=token_digest(secret)).first()
    if token is not None:
        token.last_used_at = timezone.now()
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=token.last_used_at)
    return token

"""Rendered public pages in Django's cache, retired all at once by a site-wide generation number.

Every write that changes what pages show bumps the generation once it has committed
(`bump_generation_on_commit`). A cached page carries the stamp it was rendered under:
the generation, today's date (the run page's citation shows an access date) and a
digest of the code and templates (a deploy never serves its predecessor's pages).
It is served only while its stamp is current; a stale entry is rendered again and
overwritten. The generation is read before the page's queries run, so a page
rendered from data older than a bump carries the generation before it, and nobody
is served it.

What differs between visitors never enters the cache. A page that used the
visitor's CSRF token (a POST form) is served but not kept: the public pages
fetch their forms on demand instead. Visitors with messages to see (after a
form posted without JavaScript) and signed-in users get a page rendered for
them alone.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from functools import cache as memoize
from functools import wraps
from typing import Any, TypeVar

import django
from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

GENERATION_KEY = "pages:generation"
# What decides how a page looks, beside the database: its code, templates and static files.
PAGE_SOURCES = ("templates", "static", "runs", "attestations", "records", "kernelindex")
PAGE_SOURCE_SUFFIXES = {".py", ".html", ".css", ".js", ".svg"}

View = TypeVar("View", bound=Callable[..., HttpResponse])
Stamp = tuple[int, str, str]  # generation, date, code version
# A plain tuple, so an entry written by another release still unpickles (and fails the stamp check):
# stamp, content, headers.
CachedPage = tuple[Stamp, bytes, dict[str, str]]


def current_generation() -> int:
    """The generation pages are cached under now.

    A missing key (a new cache, or one that evicted it) starts from the clock in
    nanoseconds rather than from 1, so no page cached under an earlier generation
    can ever be served again.
    """
    generation: int = cache.get_or_set(GENERATION_KEY, time.time_ns, timeout=None) or time.time_ns()
    return generation


def bump_generation() -> None:
    """Retire every cached page now. Call it after the write commits: `bump_generation_on_commit`."""
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:
        # No generation yet, or the key was evicted: whatever starts next is a new generation.
        current_generation()


def bump_generation_on_commit() -> None:
    """Retire every cached page once the current transaction commits (at once outside one).

    Bumping before the commit would let a request in between cache the old data
    under the new generation.
    """
    transaction.on_commit(bump_generation)


@memoize
def code_version() -> str:
    """A digest of the files that shape pages (and Django's version), read once per process."""
    digest = hashlib.sha256(django.get_version().encode())
    for folder in PAGE_SOURCES:
        for path in sorted((settings.BASE_DIR / folder).rglob("*")):
            if path.suffix in PAGE_SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(settings.BASE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def page_key(request: HttpRequest) -> str:
    variant = "htmx" if getattr(request, "htmx", False) else "page"
    return f"pages:{variant}:{hashlib.sha256(request.build_absolute_uri().encode()).hexdigest()}"


def current_stamp(generation: int) -> Stamp:
    return generation, timezone.now().date().isoformat(), code_version()


def cached_page(view: View) -> View:
    """Serve a public GET view's 200 responses from the cache; see the module's docstring."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PAGE_CACHE_SECONDS or _personal(request):
            return view(request, *args, **kwargs)
        key = page_key(request)
        # One round trip: the generation and the page together.
        found = cache.get_many([GENERATION_KEY, key])
        stamp = current_stamp(found.get(GENERATION_KEY) or current_generation())
        page: CachedPage | None = found.get(key)
        if page is None or page[0] != stamp:
            response = view(request, *args, **kwargs)
            if isinstance(response, TemplateResponse):
                response.render()
            if not _shareable(request, response):
                return response
            page = (stamp, response.content, dict(response.headers))
            cache.set(key, page, timeout=settings.PAGE_CACHE_SECONDS)
        return _response(page)

    return wrapper  # type: ignore[return-value]


def _personal(request: HttpRequest) -> bool:
    """A request whose page shows something for this visitor alone."""
    return request.user.is_authenticated or len(messages.get_messages(request)) > 0


def _shareable(request: HttpRequest, response: HttpResponse) -> bool:
    """A complete page, the same for every visitor: it sets no cookie and used no visitor's CSRF token."""
    used_csrf_token = request.META.get("CSRF_COOKIE_NEEDS_UPDATE", False)  # set by Django's get_token()
    return response.status_code == 200 and not response.streaming and not response.cookies and not used_csrf_token


def _response(page: CachedPage) -> HttpResponse:
    _, content, headers = page
    response = HttpResponse(content)
    for name, value in headers.items():
        response[name] = value
    return response

"""Rendered public pages in Django's cache, retired by generation numbers: one for the site, one per scope.

A cached page carries the stamp it was rendered under: the site generation,
today's date (the run page's citation shows an access date) and the release
(a deploy never serves its predecessor's pages), and the generation of each
scope it shows. It is served only while all of them are current; a stale entry
is rendered again and overwritten. Generations are read before the page's
queries run, so a page rendered from data older than a bump carries the
generation before it, and nobody is served it.

- `bump_generation_on_commit()` retires every page (imports, moderation).
- `retire_pages_on_commit(*scopes)` retires only the pages that show those
  scopes: `run:<run id>`, `group:<comparison key>`, `definition:<source>/<name>`
  and `lists` (home, index.json, source pages, compare pages). A view declares
  its scopes with `cached_page(scopes=...)` from its URL arguments, and may add
  ones it learns while rendering with `add_page_scopes` (a run page learns its
  group from the run).

A page is keyed on its path and only the query parameters its view declares
(`cached_page(params=...)`); the view is handed only those, so `?junk=N` can
neither make a new entry nor show on the page.

What differs between visitors never enters the cache. A page that used the
visitor's CSRF token (a POST form) is served but not kept: the public pages
fetch their forms on demand instead. Visitors with messages to see (after a
form posted without JavaScript) and signed-in users get a page rendered for
them alone.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from functools import cache as memoize
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import django
from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse
from django.utils import timezone

GENERATION_KEY = "pages:generation"
SCOPE_KEY_PREFIX = "pages:scope:"
# Where no release id is configured and no git commit is readable: what decides how a page
# looks, beside the database (its code, templates and static files), hashed once per process.
PAGE_SOURCES = ("templates", "static", "runs", "attestations", "records", "kernelindex", "web")
PAGE_SOURCE_SUFFIXES = {".py", ".html", ".css", ".js", ".svg"}

View = TypeVar("View", bound=Callable[..., HttpResponse])
Scopes = Callable[..., Iterable[str]]
Stamp = tuple[int, str, str]  # site generation, date, release
ScopeStamp = tuple[tuple[str, int], ...]  # (scope, its generation) for each scope the page shows
# A plain tuple, so an entry written by another release still unpickles (and fails the stamp check):
# stamp, scope stamp, content, headers.
CachedPage = tuple[Stamp, ScopeStamp, bytes, dict[str, str]]
SCOPES_ATTRIBUTE = "_page_scopes"
# Scopes pages learned while rendering (a run page, its group), by page key, remembered by this process so
# that the next hit fetches them with the page: one round trip instead of two. Only a hint: the scopes
# stored with the page decide, and any missing from the first fetch are fetched after it.
LEARNED_SCOPES_KEPT = 100_000
_learned_scopes: dict[str, tuple[str, ...]] = {}


# -- generations -------------------------------------------------------------------


def current_generation() -> int:
    """The site generation pages are cached under now.

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


def scope_key(scope: str) -> str:
    return SCOPE_KEY_PREFIX + scope


def retire_pages(*scopes: str) -> None:
    """Retire the cached pages that show any of these scopes now; prefer `retire_pages_on_commit`."""
    for scope in scopes:
        try:
            cache.incr(scope_key(scope))
        except ValueError:
            # A scope never retired reads as 0; one whose key was evicted may have been stamped with any
            # earlier value. The clock is past all of them.
            cache.set(scope_key(scope), time.time_ns(), timeout=None)


def retire_pages_on_commit(*scopes: str) -> None:
    """Retire the pages showing these scopes once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: retire_pages(*scopes))


def scope_generations(scopes: Iterable[str], found: dict[str, Any] | None = None) -> ScopeStamp:
    """Each scope with its generation (0 for one never retired), from `found` where it was fetched already."""
    names = list(dict.fromkeys(scopes))
    if found is None:
        found = cache.get_many([scope_key(scope) for scope in names])
    return tuple((scope, int(found.get(scope_key(scope)) or 0)) for scope in names)


def add_page_scopes(request: HttpRequest, *scopes: str) -> None:
    """Scopes a view learns while rendering (a run page, its group); their generations are read now, before
    the queries that show them."""
    known: ScopeStamp | None = getattr(request, SCOPES_ATTRIBUTE, None)
    if known is None:  # not a cached page, or one rendered for this visitor alone
        return
    names = {scope for scope, _ in known}
    setattr(request, SCOPES_ATTRIBUTE, known + scope_generations(s for s in scopes if s not in names))


# -- the release -------------------------------------------------------------------


@memoize
def release_id() -> str:
    """What a deploy changes: RELEASE_ID, else the checkout's git commit, else a digest of the page sources."""
    configured: str = getattr(settings, "RELEASE_ID", "")
    if configured:
        return configured
    return git_commit(settings.BASE_DIR) or f"files-{source_digest()}"


def git_commit(checkout: Path) -> str | None:
    """The commit checked out at `checkout`, read from .git without running git; None where it is not readable.

    Follows a worktree's `.git` file to its git directory, and a branch to its ref,
    loose or packed.
    """
    try:
        git_dir = checkout / ".git"
        if git_dir.is_file():
            git_dir = (checkout / git_dir.read_text().removeprefix("gitdir:").strip()).resolve()
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return _commit_or_none(head)
        ref = head.removeprefix("ref:").strip()
        common = git_dir / (git_dir / "commondir").read_text().strip() if (git_dir / "commondir").is_file() else git_dir
        for folder in dict.fromkeys((git_dir, common)):
            if (folder / ref).is_file():
                return _commit_or_none((folder / ref).read_text().strip())
            packed = folder / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    commit, _, name = line.partition(" ")
                    if name == ref:
                        return _commit_or_none(commit)
    except OSError:
        return None
    return None


def _commit_or_none(text: str) -> str | None:
    is_commit = len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
    return text if is_commit else None


def source_digest() -> str:
    """A digest of the files that shape pages (and Django's version)."""
    digest = hashlib.sha256(django.get_version().encode())
    for folder in PAGE_SOURCES:
        for path in sorted((settings.BASE_DIR / folder).rglob("*")):
            if path.suffix in PAGE_SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(settings.BASE_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


# -- the decorator -------------------------------------------------------------------


def page_key(request: HttpRequest) -> str:
    """The page's address with only the parameters its view reads (the decorator has filtered request.GET)."""
    variant = "htmx" if getattr(request, "htmx", False) else "page"
    address = f"{request.scheme}://{request.get_host()}{request.path}?{request.GET.urlencode()}"
    return f"pages:{variant}:{hashlib.sha256(address.encode()).hexdigest()}"


def current_stamp(generation: int) -> Stamp:
    return generation, timezone.now().date().isoformat(), release_id()


def cached_page(*, params: Sequence[str] = (), scopes: Scopes | None = None) -> Callable[[View], View]:
    """Serve a public GET view's 200 responses from the cache; see the module's docstring.

    `params`: the query parameters the view reads; it sees no others. `scopes`: called with the view's
    URL arguments, the scopes the page shows.
    """

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            request.GET = _only(request.GET, params)  # type: ignore[assignment]  # immutable, as Django makes it
            if not settings.PAGE_CACHE_SECONDS or _personal(request):
                return view(request, *args, **kwargs)
            declared = list(dict.fromkeys(scopes(**kwargs))) if scopes else []
            return _served(request, view, args, kwargs, declared)

        return wrapper  # type: ignore[return-value]

    return decorate


def _served(
    request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any, declared: list[str]
) -> HttpResponse:
    key = page_key(request)
    # One round trip for the site generation, the page and the scopes known from the URL or learned before.
    fetched = [scope_key(scope) for scope in (*declared, *_learned_scopes.get(key, ()))]
    found = cache.get_many([GENERATION_KEY, key, *fetched])
    stamp = current_stamp(found.get(GENERATION_KEY) or current_generation())
    page: CachedPage | None = found.get(key)
    if page is not None and page[0] == stamp and _scopes_current(page[1], found, set(fetched)):
        _learn(key, page[1], declared)
        return _response(page)
    setattr(request, SCOPES_ATTRIBUTE, scope_generations(declared, found))
    response = view(request, *args, **kwargs)
    if isinstance(response, TemplateResponse):
        response.render()
    if not _shareable(request, response):
        return response
    page = (stamp, getattr(request, SCOPES_ATTRIBUTE), response.content, dict(response.headers))
    cache.set(key, page, timeout=settings.PAGE_CACHE_SECONDS)
    _learn(key, page[1], declared)
    return _response(page)


def _learn(key: str, stamped: ScopeStamp, declared: list[str]) -> None:
    learned = tuple(scope for scope, _ in stamped if scope not in declared)
    if learned and _learned_scopes.get(key) != learned:
        if len(_learned_scopes) >= LEARNED_SCOPES_KEPT:
            _learned_scopes.clear()  # rarely: a crawl through more pages than are kept
        _learned_scopes[key] = learned


def _scopes_current(stamped: ScopeStamp, found: dict[str, Any], fetched: set[str]) -> bool:
    """Whether no scope the page shows was retired since; scopes the URL did not name cost one more round trip."""
    missing = [scope_key(scope) for scope, _ in stamped if scope_key(scope) not in fetched]
    if missing:
        found = {**found, **cache.get_many(missing)}
    return all(int(found.get(scope_key(scope)) or 0) == generation for scope, generation in stamped)


def _only(query: QueryDict, params: Sequence[str]) -> QueryDict:
    kept = QueryDict(mutable=True)
    for name in params:
        if name in query:
            kept.setlist(name, query.getlist(name))
    kept._mutable = False
    return kept


def _personal(request: HttpRequest) -> bool:
    """A request whose page shows something for this visitor alone."""
    return request.user.is_authenticated or len(messages.get_messages(request)) > 0


def _shareable(request: HttpRequest, response: HttpResponse) -> bool:
    """A complete page, the same for every visitor: it sets no cookie and used no visitor's CSRF token."""
    used_csrf_token = request.META.get("CSRF_COOKIE_NEEDS_UPDATE", False)  # set by Django's get_token()
    return response.status_code == 200 and not response.streaming and not response.cookies and not used_csrf_token


def _response(page: CachedPage) -> HttpResponse:
    _, _, content, headers = page
    response = HttpResponse(content)
    for name, value in headers.items():
        response[name] = value
    return response

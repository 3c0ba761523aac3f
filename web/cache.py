"""Rendered public pages in Django's cache, retired by generation numbers: one for the site, one per scope.

A cached page carries the stamp it was rendered under: the site generation,
today's date (the run page's citation shows an access date) and the release
(a deploy never serves its predecessor's pages), and the generation of each
scope it shows. It is served only while all of them are current; a stale entry
is rendered again and overwritten. Generations are read before the page's
queries run, so a page rendered from data older than a bump carries the
generation before it, and nobody is served it.

- `bump_generation_on_commit()` retires every page (imports).
- `retire_pages_on_commit(*scopes)` retires only the pages that show those
  scopes. Which scopes each kind of page shows, and which each kind of write
  retires, is declared once in web/scopes.py: a view names its kind of page
  (`cached_page(scopes.RUN)`) and may add scopes it learns while rendering
  with `add_page_scopes` (a run page learns its group from the run); a writer
  calls its declared retirement, never these functions.

A page is keyed on its path and only the query parameters its view declares,
each with the function that gives its one spelling (`cached_page(kind,
params={"q": text, "after": normal_cursor})`): `?page=01` is `?page=1`, an
unreadable value is left out (the view's default), and `?junk=N` is not seen at
all. The view is handed only those, as spelled there, so no spelling makes an
entry of its own or shows on the page. The cache holds at most
PAGE_CACHE_ENTRIES pages, whatever is asked for: a page's key is one of that
many slots, and a page found in its slot under another address is a miss.

The cache holds JSON only (web/json_cache.py): a page is kept as an object with its content in base64, and
read back only if it has exactly the shape this module writes (`_read_page`); anything else in its slot (a
page of another release's shape, or a value planted by whoever reached the cache) is a miss.

A page is kept gzipped (one of 100 kB, a leaderboard's, is about 14 kB), and served so to every client whose
Accept-Encoding admits gzip, which every browser's does: compressed once, when it is cached, rather than by
nginx on each request, and fetched from the cache in an eighth of the bytes. Another client gets it
decompressed. Shared pages hold no secret (no CSRF token, below), so compressing them beside text a visitor
chose (a search) gives nothing away (BREACH needs a secret in the body).

What differs between visitors never enters the cache. A page that used the
visitor's CSRF token (a POST form) is served but not kept: the public pages
fetch their forms on demand instead. Visitors with messages to see (after a
form posted without JavaScript) and signed-in users get a page rendered for
them alone.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import re
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cache as memoize
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard, TypeVar

import django
from django.conf import settings
from django.contrib import messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers

if TYPE_CHECKING:
    from web.scopes import PageKind

GENERATION_KEY = "pages:generation"
SCOPE_KEY_PREFIX = "pages:scope:"
# Where no release id is configured and no git commit is readable: what decides how a page
# looks, beside the database (its code, templates and static files), hashed once per process.
PAGE_SOURCES = ("templates", "static", "runs", "attestations", "records", "kernelindex", "web")
PAGE_SOURCE_SUFFIXES = {".py", ".html", ".css", ".js", ".svg"}

View = TypeVar("View", bound=Callable[..., HttpResponse])
# A declared parameter's one spelling of a value; empty (or None) leaves the parameter out.
Normaliser = Callable[[str], str | None]
Stamp = tuple[int, str, str]  # site generation, date, release
ScopeStamp = tuple[tuple[str, int], ...]  # (scope, its generation) for each scope the page shows
# Smaller pages are kept as they are (as nginx's gzip_min_length leaves them).
GZIP_MIN_BYTES = 1024
# How many pages the cache holds at most (settings.PAGE_CACHE_ENTRIES overrides): a leaderboard is ~100 kB,
# most pages ~25 kB, so about 1 GB at the very most. Past it, pages share slots and evict each other.
PAGE_CACHE_ENTRIES = 40_000
SCOPES_ATTRIBUTE = "_page_scopes"
# Scopes pages learned while rendering (a run page, its group), by page key, remembered by this process so
# that the next hit fetches them with the page: one round trip instead of two. Only a hint: the scopes
# stored with the page decide, and any missing from the first fetch are fetched after it.
LEARNED_SCOPES_KEPT = 100_000
_learned_scopes: dict[str, tuple[str, ...]] = {}


class CachedPage(NamedTuple):
    """A rendered page as this module keeps it; the cache holds it as JSON (`_stored_page`, `_read_page`)."""

    stamp: Stamp
    scopes: ScopeStamp
    content: bytes
    headers: dict[str, str]
    address: str  # the page's own: its slot may hold another's
    gzipped: bool


PAGE_FIELDS = frozenset(CachedPage._fields)


# -- generations -------------------------------------------------------------------


def current_generation() -> int:
    """The site generation pages are cached under now.

    A missing key (a new cache, or one that evicted it) starts from the clock in
    nanoseconds rather than from 1, so no page cached under an earlier generation
    can ever be served again. So does a key that holds no integer: no value this
    site writes, and `add` would never replace it.
    """
    generation = cache.get(GENERATION_KEY)
    if type(generation) is int:
        return generation
    start = time.time_ns()
    if cache.add(GENERATION_KEY, start, timeout=None):
        return start
    generation = cache.get(GENERATION_KEY)  # another process started one since
    if type(generation) is int:
        return generation
    cache.set(GENERATION_KEY, start, timeout=None)
    return start


def _generation(value: Any) -> int:
    """A generation as the cache gave it; 0 (never retired) for anything but an integer."""
    return value if type(value) is int else 0


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
    return tuple((scope, _generation(found.get(scope_key(scope)))) for scope in names)


def fragment_stamp(*scopes: str) -> str:
    """The site generation, the release and these scopes' generations, in one read: part of the key of a
    template fragment that shows those scopes (a group's chart), so that a write retiring them, or a deploy,
    retires the fragment with the pages. Read it before the queries the fragment shows."""
    found = cache.get_many([GENERATION_KEY, *(scope_key(scope) for scope in scopes)])
    site = _generation(found.get(GENERATION_KEY)) or current_generation()
    generations = [str(generation) for _, generation in scope_generations(scopes, found)]
    return "-".join([str(site), release_id(), *generations])


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


# -- declared parameters -------------------------------------------------------------


def text(value: str) -> str:
    """Free text as a form reads it: without the spaces around it."""
    return value.strip()


def page_number(value: str) -> str | None:
    """A page number's one spelling (`01` is `1`); page 1, and anything that is not a page number, is the default."""
    if not re.fullmatch(r"[0-9]{1,9}", value.strip()):
        return None
    number = int(value)
    return str(number) if number > 1 else None


def one_of(*values: str) -> Normaliser:
    """A parameter with a few meaningful values; any other is the default."""
    return lambda value: value if value in values else None


def _normalised(query: QueryDict, params: Mapping[str, Normaliser]) -> QueryDict:
    """Only the declared parameters, one value each (the last, as QueryDict.get reads it), in their one spelling."""
    kept = QueryDict(mutable=True)
    for name, normalise in params.items():
        if name in query and (value := normalise(str(query[name]))):
            kept[name] = value
    kept._mutable = False
    return kept


# -- the decorator -------------------------------------------------------------------


def page_address(request: HttpRequest) -> str:
    """What a page is: htmx fragment or page, host (in lower case: hosts are), path, and the declared parameters
    (the decorator has normalised request.GET)."""
    variant = "htmx" if getattr(request, "htmx", False) else "page"
    return f"{variant} {request.scheme}://{request.get_host().lower()}{request.path}?{request.GET.urlencode()}"


def page_key(address: str) -> str:
    """The cache slot of the page at `address`: one of PAGE_CACHE_ENTRIES, so no crawl can make the cache grow
    past them."""
    digest = int.from_bytes(hashlib.sha256(address.encode()).digest()[:8], "big")
    return f"pages:{digest % page_cache_entries()}"


def page_cache_entries() -> int:
    return int(getattr(settings, "PAGE_CACHE_ENTRIES", PAGE_CACHE_ENTRIES))


def current_stamp(generation: int) -> Stamp:
    return generation, timezone.now().date().isoformat(), release_id()


def cached_page(kind: PageKind, *, params: Mapping[str, Normaliser] | None = None) -> Callable[[View], View]:
    """Serve a public GET view's 200 responses from the cache; see the module's docstring.

    `kind`: the kind of page (web/scopes.py), which says the scopes it shows from the view's URL arguments.
    `params`: the query parameters the view reads, each with its normaliser; it sees no others.
    """
    declared_params = dict(params or {})

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            request.GET = _normalised(request.GET, declared_params)  # type: ignore[assignment]  # immutable
            if not settings.PAGE_CACHE_SECONDS or _personal(request):
                return view(request, *args, **kwargs)
            declared = list(dict.fromkeys(kind.scopes(**kwargs)))
            return _served(request, view, args, kwargs, declared)

        wrapper.page_kind = kind  # type: ignore[attr-defined]  # for tests/web/test_scopes.py
        return wrapper  # type: ignore[return-value]

    return decorate


def _served(
    request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any, declared: list[str]
) -> HttpResponse:
    address = page_address(request)
    key = page_key(address)
    # One round trip for the site generation, the page and the scopes known from the URL or learned before.
    fetched = [scope_key(scope) for scope in (*declared, *_learned_scopes.get(address, ()))]
    found = cache.get_many([GENERATION_KEY, key, *fetched])
    stamp = current_stamp(_generation(found.get(GENERATION_KEY)) or current_generation())
    page = _read_page(found.get(key))
    if _current(page, stamp, address) and _scopes_current(page.scopes, found, set(fetched)):
        _learn(address, page.scopes, declared)
        return _response(page, request)
    setattr(request, SCOPES_ATTRIBUTE, scope_generations(declared, found))
    response = view(request, *args, **kwargs)
    if isinstance(response, TemplateResponse):
        response.render()
    if not _shareable(request, response):
        return response
    headers = dict(response.headers)
    content, gzipped = _kept_content(response.content, headers)
    page = CachedPage(stamp, getattr(request, SCOPES_ATTRIBUTE), content, headers, address, gzipped)
    cache.set(key, _stored_page(page), timeout=settings.PAGE_CACHE_SECONDS)
    _learn(address, page.scopes, declared)
    return _response(page, request)


def _current(page: CachedPage | None, stamp: Stamp, address: str) -> TypeGuard[CachedPage]:
    """The slot holds this page (not another sharing the slot), as of now."""
    return page is not None and page.stamp == stamp and page.address == address


def _stored_page(page: CachedPage) -> dict[str, Any]:
    """The page as the cache holds it: JSON, the content in base64."""
    return {**page._asdict(), "content": base64.b64encode(page.content).decode("ascii")}


def _read_page(value: Any) -> CachedPage | None:
    """The page in a slot, if the slot holds exactly what `_stored_page` writes; None for anything else (a page
    of another release's shape, or a value planted by whoever reached the cache)."""
    if not isinstance(value, dict) or value.keys() != PAGE_FIELDS:
        return None
    stamp, scopes, headers = value["stamp"], value["scopes"], value["headers"]
    if not (_shaped(stamp, (int, str, str)) and isinstance(scopes, list) and isinstance(headers, dict)):
        return None
    shaped_scopes = all(_shaped(scope, (str, int)) for scope in scopes)
    if not shaped_scopes or not all(isinstance(header, str) for header in headers.values()):
        return None
    if not (isinstance(value["content"], str) and isinstance(value["address"], str) and type(value["gzipped"]) is bool):
        return None
    try:
        content = base64.b64decode(value["content"], validate=True)
    except binascii.Error:
        return None
    read_scopes = tuple((scope, generation) for scope, generation in scopes)
    return CachedPage(tuple(stamp), read_scopes, content, headers, value["address"], value["gzipped"])


def _shaped(value: Any, types: tuple[type, ...]) -> bool:
    """A list of exactly these types, one each (type(), so True is no int)."""
    return isinstance(value, list) and tuple(type(part) for part in value) == types


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
    return all(_generation(found.get(scope_key(scope))) == generation for scope, generation in stamped)


def _personal(request: HttpRequest) -> bool:
    """A request whose page shows something for this visitor alone: a signed-in user, or messages to see. Both
    come with a cookie (the session's, or the messages' own), so a visitor who sends neither, as most do, is
    answered without loading the session."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES and CookieStorage.cookie_name not in request.COOKIES:
        return False
    return request.user.is_authenticated or len(messages.get_messages(request)) > 0


def _shareable(request: HttpRequest, response: HttpResponse) -> bool:
    """A complete page, the same for every visitor: it sets no cookie and used no visitor's CSRF token."""
    used_csrf_token = request.META.get("CSRF_COOKIE_NEEDS_UPDATE", False)  # set by Django's get_token()
    return response.status_code == 200 and not response.streaming and not response.cookies and not used_csrf_token


def _kept_content(content: bytes, headers: Mapping[str, str]) -> tuple[bytes, bool]:
    """The content as the cache keeps it: gzipped (mtime 0: the same page, the same bytes), unless it is small
    or already encoded."""
    if len(content) < GZIP_MIN_BYTES or "Content-Encoding" in headers:
        return content, False
    # Level 1, as nginx's default: a leaderboard page in 0.45 ms here, 14 kB (level 6: 1.2 ms, 12 kB).
    return gzip.compress(content, compresslevel=1, mtime=0), True


def _response(page: CachedPage, request: HttpRequest) -> HttpResponse:
    content, gzipped = page.content, page.gzipped
    compressed = gzipped and accepts_gzip(request.headers.get("Accept-Encoding", ""))
    response = HttpResponse(content if compressed or not gzipped else gzip.decompress(content))
    for name, value in page.headers.items():
        response[name] = value
    # Shared caches keep apart the two encodings, and the pages of signed-in visitors, rendered for them alone.
    patch_vary_headers(response, ["Accept-Encoding", "Cookie"] if gzipped else ["Cookie"])
    if compressed:
        response["Content-Encoding"] = "gzip"
    return response


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header admits gzip (RFC 9110, 12.5.3): 'gzip' (or 'x-gzip') or '*' with a
    weight above 0, a named coding's weight deciding over '*'. A weight that is not a number counts as 0."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *parameters = item.split(";")
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.strip().lower()] = weight
    named = weights.get("gzip", weights.get("x-gzip"))
    return (named if named is not None else weights.get("*", 0.0)) > 0

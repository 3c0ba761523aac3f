"""Per-client brakes kept in Django's cache: on the public forms, and on failed admin sign-ins.

Each (client, form) has a counter per fixed window of time, made with `cache.add`
and raised with `cache.incr`. On Redis, the production cache, both are single
atomic commands, so however many requests race, no more than the limit get
through. (The file cache of a laptop setup makes no such promise.) A fixed window
lets a client spend its allowance at the end of one window and again at the start
of the next; for a brake with moderation behind it that is fine, and it needs no
lock and no list of timestamps.

The client is known only by a keyed hash of its address (its /64 for IPv6), so
no address is ever stored. A request whose address cannot be read (web/proxies.py)
gets no counter at all: UnknownClientError, which web/middleware.py answers with a
400, so a malformed X-Forwarded-For can never buy a fresh allowance.
"""

from __future__ import annotations

import ipaddress
import math
import time

from django.core.cache import cache
from django.http import HttpRequest
from django.utils.crypto import salted_hmac

from web.proxies import client_address

SUBMISSIONS_PER_WINDOW = 5
WINDOW_SECONDS = 10 * 60
# Sign-in attempts per client and username; a successful sign-in starts the count again.
SIGN_INS_PER_WINDOW = 5
SIGN_IN_WINDOW_SECONDS = 15 * 60


def _now() -> float:
    return time.time()


class UnknownClientError(Exception):
    """The request does not say readably who sent it, so no allowance can be counted for it."""


def _client_network(request: HttpRequest) -> str:
    """The client's address, or for IPv6 its /64: one subscriber usually holds a whole /64 and could rotate
    through it."""
    address = client_address(request)
    if address is None:
        raise UnknownClientError("client address unreadable")
    ip = ipaddress.ip_address(address)
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _hashed(*parts: str) -> str:
    return salted_hmac("web.ratelimit", "\n".join(parts)).hexdigest()[:32]


def client_key(request: HttpRequest, form_name: str) -> str:
    return f"ratelimit:{form_name}:{_hashed(_client_network(request))}"


def sign_in_key(request: HttpRequest, username: str) -> str:
    """Per client and username: a guesser is slowed down, the account's owner elsewhere is not."""
    return f"admin:sign-in:{_hashed(_client_network(request), username.casefold())}"


def _window(key: str, seconds: int) -> tuple[str, int]:
    """The counter of the current window for `key`, and the seconds until the next window starts."""
    now = _now()
    index = int(now // seconds)
    return f"{key}:{index}", max(1, math.ceil((index + 1) * seconds - now))


def count_in_window(key: str, seconds: int = WINDOW_SECONDS) -> int:
    counter, _ = _window(key, seconds)
    return int(cache.get(counter) or 0)


def seconds_until_allowed(key: str, limit: int = SUBMISSIONS_PER_WINDOW, seconds: int = WINDOW_SECONDS) -> int:
    """0 when the client has allowance left in this window, else the seconds until the next one."""
    counter, remaining = _window(key, seconds)
    return remaining if int(cache.get(counter) or 0) >= limit else 0


def take(key: str, limit: int = SUBMISSIONS_PER_WINDOW, seconds: int = WINDOW_SECONDS) -> int:
    """Count one use, atomically: 0 when it is within the limit, else the seconds until the next window."""
    counter, remaining = _window(key, seconds)
    cache.add(counter, 0, timeout=remaining + 1)
    try:
        used = cache.incr(counter)
    except ValueError:
        # Evicted (or expired) between add and incr: this use is the first of a new count.
        cache.add(counter, 1, timeout=remaining + 1)
        used = 1
    return 0 if used <= limit else remaining


def forget(key: str, seconds: int) -> None:
    cache.delete(_window(key, seconds)[0])

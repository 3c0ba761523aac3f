"""A per-client, per-form brake on public submissions, kept in Django's cache.

The client is known only by a keyed hash of its address (its /64 for IPv6), so
no address is ever stored. The log of recent submissions is read and written
without a lock: two racing requests may both get through, which is fine for a
spam brake that moderation stands behind anyway.
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


def _now() -> float:
    return time.time()


def _client_network(address: str) -> str:
    """The address, or for IPv6 its /64: one subscriber usually holds a whole /64 and could rotate through it."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def client_key(request: HttpRequest, form_name: str) -> str:
    client = _client_network(client_address(request))
    digest = salted_hmac("attestations.ratelimit", client).hexdigest()[:32]
    return f"attestations:ratelimit:{form_name}:{digest}"


def _recent(key: str) -> list[float]:
    since = _now() - WINDOW_SECONDS
    return [stamp for stamp in cache.get(key, []) if stamp > since]


def seconds_until_allowed(key: str) -> int:
    """0 when the client may submit now, else the seconds until enough of its recent submissions leave the window."""
    recent = sorted(_recent(key))
    if len(recent) < SUBMISSIONS_PER_WINDOW:
        return 0
    return max(1, math.ceil(recent[-SUBMISSIONS_PER_WINDOW] + WINDOW_SECONDS - _now()))


def record_submission(key: str) -> None:
    cache.set(key, [*_recent(key), _now()], timeout=WINDOW_SECONDS)

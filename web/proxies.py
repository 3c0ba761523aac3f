"""Who is asking: the client's address as the proxies in front of the app report it.

Each proxy appends the address it received the request from to X-Forwarded-For,
so the list reads client-supplied entries first and the trusted proxies' entries
last. With `TRUSTED_PROXY_HOPS = n`, the address the outermost trusted proxy saw
is the n-th entry from the right; anything further left was written by the
client and proves nothing, so junk there (`,,`, an empty entry) changes nothing.

When that entry is missing or not an address, nobody can say who the client is:
the answer is None, never the socket's address. Behind nginx on a unix socket
that address is empty, and behind a proxy on TCP it is the proxy's: either way
one address shared by every request with a malformed header, a fresh allowance
for whoever sends one. Only a request that passed no proxy at all (no
X-Forwarded-For) is known by its socket's peer.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

FORWARDED_FOR = "HTTP_X_FORWARDED_FOR"


def client_address(request: HttpRequest) -> str | None:
    """The client's IP address, or None where the request does not say it readably."""
    hops: int = settings.TRUSTED_PROXY_HOPS
    forwarded: str = request.META.get(FORWARDED_FOR, "")
    if hops <= 0 or not forwarded.strip():
        return _address(request.META.get("REMOTE_ADDR", ""))
    entries = [entry.strip() for entry in forwarded.split(",")]
    if len(entries) < hops:
        # Fewer entries than trusted proxies: one of them did not add its own, and the list cannot be read.
        return None
    return _address(entries[-hops])


def _address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None

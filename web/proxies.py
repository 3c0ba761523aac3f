"""Who is asking: the client's address as the proxies in front of the app report it.

Each proxy appends the address it received the request from to X-Forwarded-For,
so the list reads client-supplied entries first and the trusted proxies' entries
last. With `TRUSTED_PROXY_HOPS = n`, the address the outermost trusted proxy saw
is the n-th entry from the right; anything further left was written by the
client and proves nothing. A missing or malformed entry falls back to the
socket's address, never to something further left.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

FORWARDED_FOR = "HTTP_X_FORWARDED_FOR"


def client_address(request: HttpRequest) -> str:
    """The client's IP address: from X-Forwarded-For behind trusted proxies, else the socket's peer."""
    remote: str = request.META.get("REMOTE_ADDR", "")
    hops: int = settings.TRUSTED_PROXY_HOPS
    if hops <= 0:
        return remote
    entries = [entry.strip() for entry in request.META.get(FORWARDED_FOR, "").split(",")]
    if len(entries) < hops or not all(entries):
        # Fewer entries than trusted proxies: one of them did not add its own, and the list cannot be read.
        return remote
    candidate = entries[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote

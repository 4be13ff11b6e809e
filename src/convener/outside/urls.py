"""A URL a caller names for the server to call: an OpenAPI tool's server or document, a remote agent's webhook,
an MCP toolset's ``serverAddress``.

Only ``http``/``https``, with a host, and no user name or password in the URL (credentials go in headers,
which are kept out of messages and traces). An operator may list the hosts such URLs may reach in
``CONVENER_URL_HOSTS``; left empty, any host is allowed (loopback included, for local tools and tests).
The same check runs before each request, redirects included, so a listed host cannot redirect elsewhere.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Sequence

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.outside.limits import GATE_URL

MAX_URL = GATE_URL
SETTING = "CONVENER_URL_HOSTS"


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """``host`` matches an entry: the same name or address, ``*.example.com`` for its subdomains, or an
    address inside a network such as ``10.0.0.0/8``. No entries: every host."""
    if not allowed:
        return True
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.strip().lower().rstrip(".")
        if entry == "*" or entry == host:
            return True
        if entry.startswith("*.") and host.endswith(entry[1:]):
            return True
        if "/" in entry:
            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def check_url(text: str, allowed_hosts: Sequence[str], field: str) -> str:
    """``text`` stripped, when it is an http(s) URL the server may call; INVALID_ARGUMENT when malformed,
    PERMISSION_DENIED when its host is not in ``allowed_hosts``."""
    url = text.strip()
    if not url:
        raise InvalidArgument(f"{field} is required: an http:// or https:// URL")
    if len(url) > MAX_URL:
        raise InvalidArgument(f"{field} is longer than {MAX_URL} characters")
    if any(character.isspace() or ord(character) < 32 or ord(character) == 127 for character in url):
        raise InvalidArgument(f"{field} must not contain spaces or control characters")
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise InvalidArgument(f"{field} is not a URL") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise InvalidArgument(f"{field} {_shown(parts)!r} must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise InvalidArgument(f"{field} must not carry a user name or password; send credentials in headers")
    if not host_allowed(host, allowed_hosts):
        raise PermissionDenied(f"{field}: host {host[:100]!r} is not one the server may call; the operator can "
                               f"add it to {SETTING}")
    return url


def _shown(parts: urllib.parse.SplitResult) -> str:
    """A URL fit for a message: no query string or credentials."""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"[:120]

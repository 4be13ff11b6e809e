"""AIP-158 pagination: page sizes and opaque, signed keyset page tokens.

A token carries the keyset position after the last item of a page (never an offset), a
fingerprint of the query it continues and one of the caller, all under an HMAC with the
installation's secret. A token that was forged, truncated, or is replayed on another query or
by another caller is rejected with INVALID_ARGUMENT. ``pageSize`` may change between pages.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from convener.api.errors import InvalidArgument
from convener.outside.limits import PAGE_TOKEN_CHARACTERS

_TOKEN_VERSION = 1
_MAX_TOKEN_LENGTH = PAGE_TOKEN_CHARACTERS
_MAC_BYTES = 16

JsonScalar = str | int | float | bool | None


def resolve_page_size(requested: int | None, *, default: int, maximum: int) -> int:
    """0 or unset means the default; above the maximum is coerced to it; negative is an error."""
    if requested is None or requested == 0:
        return default
    if requested < 0:
        raise InvalidArgument(f"pageSize must not be negative (got {requested})")
    return min(requested, maximum)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""Made once: ``json.dumps`` with any option makes an encoder per call, a good share of issuing a token."""


def _fingerprint(value: Any) -> str:
    return hashlib.sha256(_CANONICAL.encode(value).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=1024)
def _caller_fingerprint(caller: str) -> str:
    """A caller's fingerprint, the same for every page it asks for."""
    return _fingerprint(caller)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    # validate=True: a lenient decoder skips junk characters, so altered tokens would still verify.
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


@dataclass(frozen=True)
class PageTokens:
    """Issues and checks page tokens for one installation (``secret``)."""

    secret: bytes

    def issue(self, *, query: Mapping[str, Any], caller: str, position: Sequence[JsonScalar]) -> str:
        body = _COMPACT.encode(
            {"v": _TOKEN_VERSION, "q": _fingerprint(query), "c": _caller_fingerprint(caller), "k": list(position)}
        ).encode()
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def position(self, token: str, *, query: Mapping[str, Any], caller: str) -> list[JsonScalar]:
        """The keyset position a token stands for, or INVALID_ARGUMENT."""
        invalid = InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        if len(token) > _MAX_TOKEN_LENGTH or token.count(".") != 1:
            raise invalid
        body_text, mac_text = token.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, binascii.Error):
            raise invalid from None
        if _b64(body) != body_text or _b64(mac) != mac_text:
            raise invalid  # one token, one spelling: no padding or spare bits to play with
        if not hmac.compare_digest(mac, self._mac(body)):
            raise invalid
        try:
            payload = json.loads(body)
        except ValueError:
            raise invalid from None
        if (
            not isinstance(payload, dict)
            or payload.get("v") != _TOKEN_VERSION
            or payload.get("q") != _fingerprint(query)
            or payload.get("c") != _caller_fingerprint(caller)
            or not isinstance(payload.get("k"), list)
        ):
            raise invalid
        return list(payload["k"])

    def _mac(self, body: bytes) -> bytes:
        return hmac.digest(self.secret, body, "sha256")[:_MAC_BYTES]  # the one-shot form: no HMAC object


def split_page(rows: Sequence[Any], page_size: int) -> tuple[Sequence[Any], bool]:
    """Rows fetched with ``LIMIT page_size + 1``: the page, and whether another page follows."""
    return rows[:page_size], len(rows) > page_size

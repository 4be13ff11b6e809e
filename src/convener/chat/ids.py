"""Convener IDs for what exports name in their own alphabets."""

from __future__ import annotations

import hashlib
import re

from convener.api.names import ID_PATTERN

_UNSAFE = re.compile(r"[^A-Za-z0-9._~-]+")


def safe_id(external: str, limit: int = 96) -> str:
    """``external`` itself when it is a valid resource ID, else a readable, deterministic one made from
    it: unsafe runs become ``-`` and a short hash of the original keeps distinct inputs distinct."""
    if len(external) <= limit and ID_PATTERN.fullmatch(external):
        return external
    cleaned = _UNSAFE.sub("-", external).strip("-._~")[:limit] or "x"
    digest = hashlib.sha256(external.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{cleaned}-{digest}"

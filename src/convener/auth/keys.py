"""API keys: created by the operator, presented by HTTP callers as ``Authorization: Bearer <key>``.

Only a SHA-256 of each key is stored, so a copy of the store does not leak working keys.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from convener.api.errors import InvalidArgument, NotFound
from convener.api.protojson import Timestamp
from convener.auth.caller import ALL_SCOPES, SERVICE_SCOPES, Caller, normalise_scope
from convener.auth.tables import api_keys
from convener.config import SERVICES
from convener.store.database import Database

PRINCIPAL = re.compile(r"users/[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
KEY_PREFIX = "cnv_"
MAX_KEY_CHARS = 200
"""Longer is no key of ours (ours are about 50): refused before hashing."""
LABEL = re.compile(r"[a-z]{1,16}")
"""A key's label starts its ID (``demo-3f2a…``), so list-keys shows which keys a tool made."""


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    principal: str
    scopes: tuple[str, ...]
    create_time: Timestamp


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_fingerprint(secret: str) -> str | None:
    """What the store keeps of a key (its SHA-256), or None when ``secret`` cannot be a key of ours."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > MAX_KEY_CHARS:
        return None
    return _hash(secret)


class ApiKeys:
    def __init__(self, database: Database) -> None:
        self.database = database

    def create(self, principal: str, scopes: tuple[str, ...] = (ALL_SCOPES,),
               label: str | None = None) -> tuple[ApiKey, str]:
        """A new key for ``principal``; the secret is returned once and never stored. A ``label`` prefixes its ID."""
        if label is not None and not LABEL.fullmatch(label):
            raise InvalidArgument(f'key label "{label[:40]}" must be 1 to 16 lowercase letters')
        if not PRINCIPAL.fullmatch(principal):
            raise InvalidArgument(f'principal "{principal[:80]}" must look like users/alice')
        scopes = tuple(dict.fromkeys(normalise_scope(scope) for scope in scopes))
        known = {ALL_SCOPES, *SERVICES, *(scope for service in SERVICES for scope in SERVICE_SCOPES.get(service, ()))}
        unknown = sorted(set(scopes) - known)
        if unknown or not scopes:
            raise InvalidArgument(
                f"unknown scope(s) {', '.join(unknown)}; scopes are *, a service ({', '.join(SERVICES)}) "
                f"or one of {', '.join(sorted(known - {ALL_SCOPES, *SERVICES}))}"
            )
        key_id = f"{label}-{secrets.token_hex(6)}" if label else secrets.token_hex(6)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(24)}"
        created = Timestamp.now()
        with self.database.transaction() as connection:
            connection.execute(
                insert(api_keys).values(
                    key_id=key_id,
                    key_hash=_hash(secret),
                    principal=principal,
                    scopes=list(scopes),
                    create_time_us=created.to_micros(),
                )
            )
        return ApiKey(key_id, principal, scopes, created), secret

    def caller(self, secret: str) -> Caller | None:
        """The caller a presented key stands for, or None when it is not a key of ours."""
        fingerprint = key_fingerprint(secret)
        return None if fingerprint is None else self.caller_of_fingerprint(fingerprint)

    def caller_of_fingerprint(self, fingerprint: str) -> Caller | None:
        """The caller of the key whose fingerprint (``key_fingerprint``) this is, while the key exists. A
        console session keeps the fingerprint, never the key: a stolen session cookie is not a key, and
        revoking the key ends the session."""
        # A snapshot read: looking a key up must never wait for a writer (an import holds the write lock).
        with self.database.reading() as connection:
            row = connection.execute(
                select(api_keys.c.principal, api_keys.c.scopes).where(api_keys.c.key_hash == fingerprint)
            ).first()
        return Caller(row.principal, frozenset(row.scopes)) if row else None

    def list(self) -> list[ApiKey]:
        with self.database.reading() as connection:
            rows = connection.execute(select(api_keys).order_by(api_keys.c.create_time_us)).all()
        return [ApiKey(r.key_id, r.principal, tuple(r.scopes), Timestamp.from_micros(r.create_time_us)) for r in rows]

    def revoke(self, key_id: str) -> None:
        with self.database.transaction() as connection:
            if connection.execute(delete(api_keys).where(api_keys.c.key_id == key_id)).rowcount == 0:
                raise NotFound(f"API key {key_id[:40]} does not exist")

"""The demo users' API keys: labelled ``demo``, kept across loads, new ones only when asked for.

A client configured with a demo key must keep working when ``make demo`` starts again, yet the store keeps
only a hash of each key. So the secrets the demo issued are also written to ``demo-keys.json`` in the data
directory (readable by its owner only), beside the SQLite store that holds the installation secret: a load
that finds a saved key still valid prints it again. A key revoked meanwhile, or a file lost, gets its holder a
new key (and the holder's stale demo keys are revoked); ``convener demo --reissue-keys`` replaces them all.
Keys the operator made for the same users (``convener auth create-key``) are never touched.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from convener.api.errors import NotFound
from convener.auth.caller import Caller
from convener.auth.keys import ApiKeys
from convener.store.database import Database

LABEL = "demo"
"""The label of the keys the demo issues: their IDs read ``demo-…`` in ``convener auth list-keys``."""
KEYS_FILE = "demo-keys.json"
"""In the data directory: the demo keys' secrets, by principal."""


@dataclass(frozen=True)
class DemoKey:
    principal: str
    secret: str
    new: bool
    """Issued by this load (else the one an earlier load issued, still valid)."""


def _saved(path: Path) -> dict[str, str]:
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: the keys are issued again
    if not isinstance(content, dict):
        return {}
    return {str(principal): secret for principal, secret in content.items() if isinstance(secret, str)}


def _save(path: Path, keys: dict[str, str]) -> None:
    """Write the file whole or not at all, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        json.dump(keys, stream, indent=2)
        stream.write("\n")
    os.replace(staged, path)


def _revoke_demo_keys(keys: ApiKeys, principal: str) -> None:
    for key in keys.list():
        if key.principal == principal and key.key_id.startswith(f"{LABEL}-"):
            try:
                keys.revoke(key.key_id)
            except NotFound:
                pass  # revoked meanwhile


def demo_keys(database: Database, holders: list[str], scopes: tuple[str, ...], data_dir: Path,
              reissue: bool = False) -> list[DemoKey]:
    """A valid demo key for each of ``holders``: the saved one when it still works, unless ``reissue``."""
    keys = ApiKeys(database)
    path = data_dir / KEYS_FILE
    saved = _saved(path)
    found: list[DemoKey] = []
    for principal in holders:
        secret = saved.get(principal)
        if secret and not reissue and keys.caller(secret) == Caller(principal, frozenset(scopes)):
            found.append(DemoKey(principal, secret, new=False))
            continue
        _revoke_demo_keys(keys, principal)
        found.append(DemoKey(principal, keys.create(principal, scopes, label=LABEL)[1], new=True))
    if any(key.new for key in found):
        _save(path, {**saved, **{key.principal: key.secret for key in found}})
    return found

"""ASGI middleware that turns ``Authorization: Bearer <key>`` into a Caller on the request."""

from __future__ import annotations

import ipaddress
import json

import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from convener.auth.caller import ANONYMOUS, Caller
from convener.auth.keys import ApiKeys


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class BearerKeyMiddleware:
    """Resolves the caller of every request under the protected paths, or answers 401."""

    def __init__(self, app: ASGIApp, *, keys: ApiKeys, allow_anonymous: bool, public_paths: frozenset[str],
                 own_prefixes: tuple[str, ...] = ()) -> None:
        self.app = app
        self.keys = keys
        self.allow_anonymous = allow_anonymous
        self.public_paths = public_paths
        self.own_prefixes = own_prefixes
        """Paths that resolve their caller themselves (the console: a session cookie, or a sign-in page)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if scope["type"] != "http" or path in self.public_paths or path.startswith(self.own_prefixes):
            await self.app(scope, receive, send)
            return
        caller = await self._caller(scope)
        if caller is None:
            await _unauthenticated(send)
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    async def _caller(self, scope: Scope) -> Caller | None:
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and credential.strip():
            return await anyio.to_thread.run_sync(self.keys.caller, credential.strip())
        if not header and self.allow_anonymous and is_loopback((scope.get("client") or (None,))[0]):
            return ANONYMOUS
        return None


async def _unauthenticated(send: Send) -> None:
    body = json.dumps(
        {
            "error": {
                "code": 401,
                "status": "UNAUTHENTICATED",
                "message": "UNAUTHENTICATED: present a valid API key as 'Authorization: Bearer <key>' "
                "(create one with 'convener auth create-key')",
            }
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="convener"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
